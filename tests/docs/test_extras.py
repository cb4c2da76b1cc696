"""The extras are listed for users in one place, the table of docs/getting-started.md, and that
table names exactly the extras pyproject.toml declares; the README points to it.

(No tier marker: reading three files is quick, and a new extra should fail the fast tier until
the table has its row.)
"""

from __future__ import annotations

import re
import tomllib

from tests._support.paths import ROOT

HEADER = "| extra | for | installs |"


def _declared() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def _table() -> list[list[str]]:
    """The rows of the extras' table, as cells."""
    lines = (ROOT / "docs" / "getting-started.md").read_text().splitlines()
    start = lines.index(HEADER) + 2  # the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_table_lists_every_extra_once() -> None:
    names = []
    for cells in _table():
        assert len(cells) == 3 and all(cells), f"a row: the extra, what it is for, what it installs: {cells}"
        match = re.fullmatch(r"`([\w-]+)`", cells[0])
        assert match, f"the extra's cell is its name as code: {cells[0]}"
        names.append(match.group(1))
    assert len(names) == len(set(names)), names
    declared = _declared()
    assert not declared - set(names), (
        f"pyproject.toml declares {sorted(declared - set(names))}: add a row to the table in "
        "docs/getting-started.md"
    )
    assert not set(names) - declared, (
        f"docs/getting-started.md lists {sorted(set(names) - declared)}, which pyproject.toml does not "
        "declare: remove the row or declare the extra"
    )


def test_the_readme_points_to_the_table() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/getting-started.md" in readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    # and names no extra pyproject.toml does not declare
    for named in re.findall(r"mcp-trio\[([\w,]+)\]", readme):
        assert set(named.split(",")) <= _declared(), named
