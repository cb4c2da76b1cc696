"""MkDocs hook: the site's facts taken from where they are kept, and the Sphinx roles of the
docstrings (``:class:`X```) as code, linked when the target is in the API reference.

The version shown in the footer is the library's (``mcp_trio/_version.py``, the one the package
is built with), and the repository link comes from ``[project.urls]`` of ``pyproject.toml``
(``Repository``): one place each, so the site cannot name another version or address than the
package does. No Repository there: no repository link on the site.

The docstrings also serve ``help()`` and the source, in reStructuredText roles; mkdocstrings
renders their Markdown, where a role would show as ``:class:`` before the name.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def site_facts(root: Path = ROOT) -> dict[str, str | None]:
    """The library's version and its repository's address (``None`` until pyproject.toml has one)."""
    version = None
    for node in ast.parse((root / "mcp_trio" / "_version.py").read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__version__"]:
            version = ast.literal_eval(node.value)
    if not isinstance(version, str):
        raise ValueError("mcp_trio/_version.py has no __version__ = '...' for the site to show")
    urls = tomllib.loads((root / "pyproject.toml").read_text())["project"].get("urls", {})
    return {"version": version, "repository": urls.get("Repository")}


def on_config(config: Any, **kwargs: Any) -> Any:
    facts = site_facts()
    if config["repo_url"]:
        raise ValueError(
            "mkdocs.yml sets repo_url: the site takes it from pyproject.toml ([project.urls] "
            "Repository), so that the package and the site name one address; remove it from mkdocs.yml"
        )
    if facts["repository"] is not None:
        config["repo_url"] = facts["repository"]
    config["copyright"] = f"mcp-trio {facts['version']} · {config['copyright']}"
    return config


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
