"""benchmarks/lossless_codec.py still runs, and its '+extras' messages are what it says they are."""

from __future__ import annotations

import json

import msgspec
import pytest

from benchmarks.bench_codec import message_set
from benchmarks.lossless_codec import measure, with_extras
from mcp_trio.types import lossless
from tests._support.types import module

pytestmark = pytest.mark.perf


def test_every_message_is_timed_both_ways() -> None:
    rows = measure(("2025-11-25",), repeat=1, target=0.001)
    assert len(rows) == 2 * len(message_set("2025-11-25"))
    for row in rows:
        for key in ("ordinary_decode_us", "ordinary_encode_us", "lossless_decode_us", "lossless_encode_us"):
            assert row[key] > 0


def test_the_extras_variant_has_a_new_member_in_every_struct_object() -> None:
    case = next(c for c in message_set("2025-11-25") if c.type_name == "ListToolsResult")
    type_ = module("2025-11-25").ListToolsResult
    message = json.loads(case.payload)
    extra = with_extras(message, msgspec.json.decode(case.payload, type=type_))
    assert extra["x-new"] == 1
    assert all(tool["x-new"] == 1 for tool in extra["tools"])
    annotated = [tool for tool in extra["tools"] if "annotations" in tool]
    assert annotated and all(tool["annotations"]["x-new"] == 1 for tool in annotated)
    assert "x-new" not in extra["tools"][0]["inputSchema"]  # an open dict, not a Struct
    data = json.dumps(extra).encode()
    assert json.loads(lossless.encode(lossless.decode(data, type_))) == extra
