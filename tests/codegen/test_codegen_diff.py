"""codegen --diff OLD NEW and the "what changed in each revision" page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from codegen.__main__ import main
from codegen._diff_cmd import page_text
from tests._support.types import ROOT, require_schema_dir

PAGE = ROOT / "docs" / "guide" / "revisions-diff.md"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _raw(rev: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((require_schema_dir() / rev / "schema.json").read_bytes())
    return schema.get("$defs") or schema["definitions"]


def _methods(rev: str) -> set[str]:
    """Every method const of the schema's definitions, read directly."""
    found = set()
    for node in _raw(rev).values():
        const = node.get("properties", {}).get("method", {}).get("const")
        if isinstance(const, str):
            found.add(const)
    return found


def test_diff_text_lists_the_tasks_of_2025_11_25(capsys: pytest.CaptureFixture[str]) -> None:
    schemas = str(require_schema_dir())
    code, out, err = _run(capsys, "--diff", "2025-06-18", "2025-11-25", "--schema-dir", schemas)
    assert code == 0, err
    assert out.startswith("## 2025-06-18 → 2025-11-25\n")
    assert "- added `tasks/get` (either side; params `GetTaskRequestParams`; result `GetTaskResult`)" in out
    assert "- added `notifications/tasks/status` (either side;" in out
    assert "- `tools/call`: results `CallToolResult` → `CallToolResult | CreateTaskResult`" in out
    assert "- added (server): `tasks`, `tasks.cancel`, `tasks.list`," in out
    assert (
        "`Tool`: added `execution`: `ToolExecution (optional)`; added `icons`: `array of Icon (optional)`"
        in out
    )
    assert "- removed: `JSONRPCError`" in out


def test_diff_json_agrees_with_the_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    schemas = str(require_schema_dir())
    code, out, err = _run(capsys, "--diff", "2025-06-18", "2025-11-25", "--schema-dir", schemas, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["old"], d["new"]) == ("2025-06-18", "2025-11-25")
    changes = d["requests"] + d["notifications"]
    added = {c["method"] for c in changes if c["change"] == "added"}
    removed = {c["method"] for c in changes if c["change"] == "removed"}
    assert added == _methods("2025-11-25") - _methods("2025-06-18")
    assert removed == _methods("2025-06-18") - _methods("2025-11-25") == set()
    assert {"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "notifications/tasks/status"} <= added
    (cancel,) = [c for c in d["requests"] if c["method"] == "tasks/cancel"]
    assert cancel == {
        "method": "tasks/cancel",
        "change": "added",
        "direction": "both",
        "params": "CancelTaskRequestParams",
        "results": ["CancelTaskResult"],
        "capability": "tasks.cancel",
    }
    old_defs, new_defs = _raw("2025-06-18"), _raw("2025-11-25")
    assert d["definitions"]["added"] == sorted(new_defs.keys() - old_defs.keys())
    assert d["definitions"]["removed"] == sorted(old_defs.keys() - new_defs.keys())
    for side, root in (("client", "ClientCapabilities"), ("server", "ServerCapabilities")):
        top = {c["path"] for c in d["capabilities"]["added"] if c["side"] == side and "." not in c["path"]}
        assert top == new_defs[root]["properties"].keys() - old_defs[root]["properties"].keys()
    assert {"side": "client", "path": "elicitation.url"} in d["capabilities"]["added"]
    tool = {(f["field"], f["change"]) for f in d["fields"] if f["definition"] == "Tool"}
    assert {("icons", "added"), ("execution", "added")} <= tool
    new_tool = set(new_defs["Tool"]["properties"]) - set(old_defs["Tool"]["properties"])
    assert {name for name, change in tool if change == "added" and "." not in name} == new_tool


def test_diff_into_the_stateless_revision(capsys: pytest.CaptureFixture[str]) -> None:
    schemas = str(require_schema_dir())
    code, out, err = _run(capsys, "--diff", "2025-11-25", "2026-07-28", "--schema-dir", schemas, "--json")
    assert code == 0, err
    d = json.loads(out)
    by = {(c["method"], c["change"]): c for c in d["requests"] + d["notifications"]}
    assert ("initialize", "removed") in by and ("server/discover", "added") in by
    assert ("notifications/initialized", "removed") in by
    assert by[("tools/call", "results")]["new"] == "CallToolResult | InputRequiredResult"
    assert by[("notifications/progress", "direction")] == {
        "method": "notifications/progress",
        "change": "direction",
        "old": "both",
        "new": "server",
    }
    assert {"side": "server", "path": "extensions"} in d["capabilities"]["added"]
    fields = {(f["definition"], f["field"], f["change"]) for f in d["fields"]}
    assert ("ListToolsResult", "ttlMs", "added") in fields
    assert ("CallToolResult", "resultType", "added") in fields


def test_diff_reports_enum_values_and_field_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schemas = require_schema_dir()
    schema = json.loads((schemas / "2025-11-25" / "schema.json").read_bytes())
    defs = schema["$defs"]
    defs["LoggingLevel"]["enum"] = [v for v in defs["LoggingLevel"]["enum"] if v != "notice"] + ["trace"]
    defs["Tool"]["properties"]["name"] = {"type": "integer"}
    del defs["Tool"]["properties"]["title"]
    defs["Tool"]["required"].append("description")
    edited = tmp_path / "edited" / "schema.json"
    edited.parent.mkdir()
    edited.write_text(json.dumps(schema))
    code, out, err = _run(capsys, "--diff", "2025-11-25", str(edited), "--schema-dir", str(schemas), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["new"] == "edited"
    assert d["enums"] == [{"where": "LoggingLevel", "added": ['"trace"'], "removed": ['"notice"']}]
    assert sorted((f["field"], f["change"], f["old"], f["new"]) for f in d["fields"]) == [
        ("description", "required", None, None),
        ("name", "retyped", "string", "integer"),
        ("title", "removed", "string (optional)", None),
    ]
    assert d["requests"] == d["notifications"] == []
    code, out, _ = _run(capsys, "--diff", "2025-11-25", str(edited), "--schema-dir", str(schemas))
    assert '- `LoggingLevel`: added "trace"; removed "notice"' in out
    assert "- `Tool`: added" not in out and "`name` retyped `string` → `integer`" in out


def test_diff_of_an_unpinned_revision_in_the_schema_dir(capsys: pytest.CaptureFixture[str]) -> None:
    schemas = require_schema_dir()
    if not (schemas / "draft" / "schema.json").is_file():
        pytest.skip("no draft schema in the schema directory")
    code, out, err = _run(capsys, "--diff", "2026-07-28", "draft", "--schema-dir", str(schemas))
    assert code == 0, err
    # (byte-identical at the pinned commit; a new draft shows its changes here)
    same = (schemas / "draft" / "schema.json").read_bytes() == (
        schemas / "2026-07-28" / "schema.json"
    ).read_bytes()
    assert ("No change." in out) == same


def test_diff_checks_the_pinned_sha256(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schemas = require_schema_dir()
    for rev in ("2025-06-18", "2025-11-25"):
        (tmp_path / rev).mkdir()
        shutil.copy(schemas / rev / "schema.json", tmp_path / rev / "schema.json")
    with (tmp_path / "2025-11-25" / "schema.json").open("ab") as f:
        f.write(b"\n")
    code, _, err = _run(capsys, "--diff", "2025-06-18", "2025-11-25", "--schema-dir", str(tmp_path))
    assert code == 2
    assert "sha256 mismatch for revision 2025-11-25" in err


def test_diff_names_what_it_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    schemas = require_schema_dir()
    code, _, err = _run(capsys, "--diff", "2025-11-25", "2031-01-01", "--schema-dir", str(schemas))
    assert code == 2
    assert "'2031-01-01' is not a pinned revision (2024-11-05," in err
    assert f"{schemas}/2031-01-01/schema.json does not exist" in err
    code, _, err = _run(capsys, "--json")
    assert (code, err.strip()) == (2, "codegen: error: --json goes with --diff")


def test_the_revisions_page_is_fresh() -> None:
    expected = page_text(schema_dir=str(require_schema_dir()), download=False, prog="python -m codegen")
    assert PAGE.read_text(encoding="utf-8") == expected, (
        f"{PAGE.relative_to(ROOT)} is stale: run `python -m codegen --diff-page {PAGE.relative_to(ROOT)}`"
    )
    sections = [line for line in expected.splitlines() if line.startswith("## ")]
    assert sections == [
        "## 2025-11-25 → 2026-07-28",
        "## 2025-06-18 → 2025-11-25",
        "## 2025-03-26 → 2025-06-18",
        "## 2024-11-05 → 2025-03-26",
    ]


def test_diff_page_check_reports_a_stale_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schemas = str(require_schema_dir())
    page = tmp_path / "page.md"
    page.write_text("# old\n")
    code, _, err = _run(capsys, "--diff-page", str(page), "--check", "--schema-dir", schemas)
    assert code == 1
    assert f"run `python -m codegen --diff-page {page}` to regenerate it" in err
    code, out, _ = _run(capsys, "--diff-page", str(page), "--schema-dir", schemas)
    assert code == 0 and "(written)" in out
    assert _run(capsys, "--diff-page", str(page), "--check", "--schema-dir", schemas)[0] == 0
    assert page.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
