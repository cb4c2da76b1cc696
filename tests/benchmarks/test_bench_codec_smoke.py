"""benchmarks/bench_codec.py still runs: every revision's messages decode with
the generated types and get a decode and an encode time (no SDK comparison)."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from types import ModuleType

import msgspec
import pytest

from mcp_trio.types import _versions
from tests._support.paths import ROOT

pytestmark = pytest.mark.perf

BENCH = ROOT / "benchmarks" / "bench_codec.py"
#: The message kinds the benchmark measures (the first one depends on the era).
KINDS = {"tools/call request", "CallToolResult mixed", "tools/list result x100"}


def _load() -> ModuleType:
    name = "_bench_codec_under_test"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


bench = _load()


def test_the_benchmark_covers_every_supported_revision() -> None:
    assert set(bench.REVISIONS) == set(_versions.SUPPORTED_VERSIONS)


@pytest.mark.parametrize("revision", bench.REVISIONS)
def test_message_set_and_time_codec(revision: str) -> None:
    cases = bench.message_set(revision)
    first = "server/discover" if _versions.is_stateless(revision) else "initialize"
    assert {case.name for case in cases} == KINDS | {first}
    module = _versions.module_for(revision)
    for case in cases:
        assert case.revision == revision
        decoder = msgspec.json.Decoder(getattr(module, case.type_name))
        # The payload is valid for the revision and survives a round trip.
        again = msgspec.json.encode(decoder.decode(case.payload))
        assert json.loads(again) == json.loads(case.payload)
        dec, enc = bench.time_codec(decoder.decode, msgspec.json.encode, case.payload, repeat=1, target=0.001)
        assert 0 < dec < 1e6 and math.isfinite(dec), case.name
        assert 0 < enc < 1e6 and math.isfinite(enc), case.name


@pytest.mark.parametrize("revision", bench.REVISIONS)
def test_command_line_without_the_sdk(revision: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--revision", revision, "--no-sdk", "--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "sdk" not in out[0]
    number = r"\d+\.\d\d"
    rows = {}
    for line in out[2:]:
        found = re.fullmatch(rf"(\S+)\s+(.+?)\s+(\d+)\s+({number})\s+({number})", line)
        assert found, line
        assert found.group(1) == revision
        rows[found.group(2)] = (float(found.group(4)), float(found.group(5)))
    first = "server/discover" if _versions.is_stateless(revision) else "initialize"
    assert set(rows) == KINDS | {first}
    assert all(dec > 0 and enc > 0 for dec, enc in rows.values())
