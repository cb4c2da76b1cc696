"""docs/migrating.md: each FastMCP concept has a row saying what mcp-trio has for it, in the
page's three words (same, different, not offered), with the how or the why after them.

(No tier marker: reading one page is quick.)
"""

from __future__ import annotations

import re

from tests._support.paths import ROOT

PAGE = (ROOT / "docs" / "migrating.md").read_text()
VERDICT = re.compile(
    r"\*\*(Same|Different|Not offered|Not offered yet)\*\*"  # the verdict
    r"(?: \([^)]*\))?(?: idea| names)?(?:[:;.]|$)"  # "(planned)", "Same idea:"...
)


def _rows() -> list[tuple[str, str]]:
    section = PAGE.split("## Concept by concept", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith(("| FastMCP | mcp-trio |", "|---")):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            assert len(cells) == 2, f"a row is: the FastMCP concept | what mcp-trio has: {line}"
            rows.append((cells[0], cells[1]))
    return rows


def test_every_row_says_same_different_or_not_offered() -> None:
    rows = _rows()
    assert len(rows) > 80, len(rows)
    for concept, answer in rows:
        match = VERDICT.match(answer)
        assert match, f"{concept}: start with **Same**, **Different** or **Not offered**: {answer}"
        if match.group(1) != "Same":
            # different: how; not offered: why, or what to do instead
            assert len(answer) - match.end() > 20, f"{concept}: say how, or why and what instead: {answer}"


def test_each_concept_has_one_row() -> None:
    concepts = [concept for concept, _ in _rows()]
    assert len(concepts) == len(set(concepts)), sorted(c for c in concepts if concepts.count(c) > 1)


def test_middleware_has_its_counterpart() -> None:
    """The page once said FastMCP's middleware had no counterpart; mcp_trio.middleware is it."""
    answers = dict(_rows())
    middleware = next(answer for concept, answer in answers.items() if concept.startswith("Middleware"))
    assert middleware.startswith("**Different**") and "mcp_trio.middleware.Middleware" in middleware
    assert "no counterpart" not in PAGE
