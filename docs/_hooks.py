"""MkDocs hook: the Sphinx roles of the docstrings (``:class:`X```) as code, linked when the
target is in the API reference.

The docstrings also serve ``help()`` and the source, in reStructuredText roles; mkdocstrings
renders their Markdown, where a role would show as ``:class:`` before the name.
"""

from __future__ import annotations

import re
from typing import Any

ROLE = re.compile(
    r":(?:class|func|meth|mod|data|attr|exc|obj):<code>"
    r"(?:([\w.]+(?:\(\))?) &lt;([\w.]+)&gt;|(~?)([\w.]+)(\(\))?)</code>"
)


def _replace(match: re.Match[str]) -> str:
    title, titled_target, short, target, call = match.groups()
    if titled_target is not None:  # :meth:`Title <target>`
        shown, target = title, titled_target
    else:
        shown = (target.rsplit(".", 1)[-1] if short else target) + (call or "")
    code = f"<code>{shown}</code>"
    if target.startswith("mcp_trio.") and "._" not in target:
        # resolved by mkdocs-autorefs when the reference documents it; plain code otherwise
        return f'<autoref identifier="{target}" optional>{code}</autoref>'
    return code


def on_page_content(html: str, **kwargs: Any) -> str:
    return ROLE.sub(_replace, html)


class BoundFunctions:
    """A griffe extension (mkdocs.yml): a class attribute bound to a module function
    (``serve_http = _serving.serve_http`` in ``Server``) is documented as the method it is: the
    function's signature without its first parameter (the instance), and its docstring."""

    def __new__(cls, **options: Any) -> Any:
        import griffe  # (the docs build's, not the library's: a class made here, on first use)

        class _BoundFunctions(griffe.Extension):
            def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
                for module in _modules(pkg):
                    for cls_ in (m for m in module.members.values() if not m.is_alias and m.is_class):
                        for name, member in list(cls_.members.items()):
                            if member.is_alias or not member.is_attribute:
                                continue
                            target = getattr(getattr(member, "value", None), "canonical_path", None)
                            if not isinstance(target, str):
                                continue
                            try:
                                found = pkg.modules_collection[target]
                            except KeyError:
                                continue
                            if not found.is_function:
                                continue
                            method = griffe.Function(
                                name,
                                lineno=found.lineno,
                                endlineno=found.endlineno,
                                parameters=griffe.Parameters(*list(found.parameters)[1:]),
                                returns=found.returns,
                                docstring=found.docstring,
                            )
                            method.labels |= found.labels
                            cls_.set_member(name, method)

        def _modules(module: griffe.Module) -> list[griffe.Module]:
            found = [module]
            for sub in (m for m in module.members.values() if not m.is_alias and m.is_module):
                found += _modules(sub)
            return found

        return _BoundFunctions()
