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
