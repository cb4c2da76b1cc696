"""``fuzz/campaigns.py`` without the network: the pins, the targets, and the findings page
rendered from a small results file."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from fuzz import campaigns as cp

RESULTS = {
    "python_pins": {"mcp": "2.3.0"},
    "npm_pins": {"@modelcontextprotocol/server-filesystem": "2026.8.31"},
    "budget": 8.0,
    "seed": 1,
    "date": "2026-11-26",
    "machine": "CPython 3.11.7, 2 CPUs",
    "targets": [
        {
            "target": "python-sdk-server-stdio",
            "budget": 8.0,
            "seconds": 70.5,
            "campaigns": [
                {"revision": "2025-11-25", "campaign": "invalid", "examples": 12},
                {"revision": "2025-11-25", "campaign": "http", "skipped": "needs --http"},
            ],
            "findings": [
                {
                    "key": "error-codes:missing--32700",
                    "severity": "violation",
                    "message": "no error -32700 | for a message that calls for it",
                    "cites": {"level": "MUST", "document": "JSON-RPC 2.0, section 5", "text": "MUST reply"},
                    "revisions": ["2025-11-25", "2025-06-18"],
                    "transcripts": ["fuzz/findings/campaigns/python-sdk-server-stdio/finding-1.json"],
                    "replayed": [True],
                }
            ],
        },
        {"target": "filesystem-server-stdio", "skipped": "npm install failed: ENOTFOUND"},
        {"target": "python-sdk-client-http", "seconds": 30.0, "campaigns": [], "findings": []},
    ],
}


def test_the_pins_are_exact_and_every_target_is_pinned() -> None:
    py = cp.python_pins()
    npm, before = cp.npm_pins()
    assert py["mcp"] and py["fastmcp"]
    assert before.endswith("Z")
    for target in cp.TARGETS:
        assert target.package in py or target.package in npm, target.id
        for arg in target.argv:  # the programs of this repository that are launched exist
            if arg.startswith("{root}/"):
                assert (cp.ROOT / arg.removeprefix("{root}/")).is_file(), arg


def test_a_pin_that_is_not_exact_is_refused(tmp_path: Path) -> None:
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nmcp==2.3.0  # ok\nfastmcp>=4\n")
    with pytest.raises(ValueError, match="fastmcp>=4.*not an exact pin"):
        cp.python_pins(req)
    pins = tmp_path / "npm-pins.json"
    pins.write_text(json.dumps({"before": "2026-11-01T00:00:00Z", "dependencies": {"x": "^1.0.0"}}))
    with pytest.raises(ValueError, match="x '\\^1.0.0' is not an exact version"):
        cp.npm_pins(pins)


def test_the_page_renders_a_table_per_target_with_rule_revisions_and_replay() -> None:
    page = cp.render(RESULTS)
    assert page.startswith(cp.BEGIN) and page.rstrip().endswith(cp.END)
    assert (
        "Target `python-sdk-server-stdio`, `--time 8.0`, 70.5 s in all" in page
        and "seed 1" in page
        and "`mcp==2.3.0`" in page
    )
    assert "### Python SDK server (stdio): `mcp` 2.3.0" in page
    row = next(line for line in page.splitlines() if line.startswith("| `error-codes:missing--32700`"))
    assert "no error -32700 \\| for a message" in row  # a | in a message does not split the row
    assert (
        '| violation | MUST: JSON-RPC 2.0, section 5: "MUST reply" | 2025-11-25, 2025-06-18 | 1 of 1 |' in row
    )
    assert (
        "`python -m fuzz.campaigns --replay fuzz/findings/campaigns/python-sdk-server-stdio/finding-1.json`"
        in row
    )
    assert "skipped: http (needs --http)" in page
    assert "Not run: npm install failed: ENOTFOUND" in page
    assert "### Python SDK client (Streamable HTTP): `mcp` 2.3.0\n\nTarget `python-sdk-client-http`" in page
    assert page.count("No findings within this budget.") == 1


def test_the_generated_section_is_replaced_and_the_rest_kept() -> None:
    hand = "# Findings\n\nWritten by hand.\n"
    first = cp.update_page(hand, cp.render(RESULTS))
    assert first.startswith(hand) and cp.BEGIN in first
    again = cp.update_page(first + "\n## After\n", cp.render({**RESULTS, "targets": []}))
    assert again.count(cp.BEGIN) == 1 and "python-sdk-server-stdio" not in again
    assert again.startswith(hand) and again.endswith("## After\n")


def test_a_large_transcript_is_kept_gzipped_and_replayed_from_a_plain_copy(tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    small.write_text('{"case": []}')
    large = tmp_path / "large.json"
    large.write_text(json.dumps({"case": [{"text": "x" * (cp.KEEP_PLAIN + 1)}]}))
    kept = tmp_path / "kept"
    assert cp.keep(small, kept) == kept / "small.json"
    packed = cp.keep(large, kept)
    assert packed == kept / "large.json.gz" and packed.stat().st_size < 100_000
    with cp.readable(packed) as plain:
        assert plain.name == "large.json" and plain.read_bytes() == large.read_bytes()
    assert not plain.exists()  # the plain copy is gone after use
    with cp.readable(kept / "small.json") as same:
        assert same == kept / "small.json"


def test_the_page_gives_the_one_command_that_regenerates_it_and_how_long_it_took() -> None:
    page = cp.render({**RESULTS, "run_seconds": 1234.0})
    assert "Generated by `python -m fuzz.campaigns --time 8.0 --seed 1`" in page
    assert "The targets took 1.7 min in all (fuzzing and replays)" in page  # 70.5 s + 30 s
    assert "the last run of the command, 20.6 min, installation included" in page
    mixed = {**RESULTS, "targets": [*RESULTS["targets"], {"target": "fastmcp-server-stdio", "budget": 30.0}]}
    assert "Targets run with another budget since (given with each): fastmcp-server-stdio." in cp.render(
        mixed
    )


def _http_target(tmp_path: Path, body: str) -> cp.Target:
    script = tmp_path / "server.py"
    script.write_text(body)
    return cp.Target("t", "test server", "mcp", "http", ("{python}", str(script), "{port}"))


def test_an_http_target_that_lost_its_port_is_started_again_on_another(tmp_path: Path) -> None:
    marker = tmp_path / "tried"
    target = _http_target(
        tmp_path,
        "import sys, pathlib, http.server\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "if not marker.exists():\n"
        "    marker.touch()\n"
        "    sys.exit('OSError: [Errno 98] Address already in use')\n"
        "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), http.server.BaseHTTPRequestHandler)"
        ".serve_forever()\n",
    )
    inst = cp.Installed(python=Path(sys.executable))
    with cp.launched(target, inst) as options:
        assert options[0] == "--http" and options[1].startswith("http://127.0.0.1:")
        port = int(options[1].rsplit(":", 1)[1].split("/")[0])
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_an_http_target_that_never_starts_is_skipped_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cp, "LAUNCH_TRIES", 2)
    target = _http_target(tmp_path, "import sys\nsys.exit('cannot bind')\n")
    inst = cp.Installed(python=Path(sys.executable))
    entry = cp.run_target(target, inst, 1.0, 1, tmp_path / "out")
    assert "did not start in 2 tries" in entry["skipped"] and entry["skipped"].count("cannot bind") == 2
