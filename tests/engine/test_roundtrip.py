"""The spec's own example messages travel through two real sessions unchanged.

For every 2026-07-28 example request the client may send, the client sends the
example's params, the server handler sees exactly those params, answers with
each example result of that method, and the client gets exactly that result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio import RequestContext, open_memory_transport_pair, open_session
from mcp_trio.types import _versions
from tests._support.schema import schema_dir

VERSION = "2026-07-28"
SCHEMAS = schema_dir()
EXAMPLES = SCHEMAS / VERSION / "examples" if SCHEMAS else None
MODULE = _versions.module_for(VERSION)
# The core adds these to every request of a stateless session.
INJECTED = {
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
}


def request_cases() -> list[Any]:
    if EXAMPLES is None:
        return []
    cases = []
    for spec in MODULE.METHODS.values():
        if spec.kind != "request" or spec.direction not in ("client", "both") or spec.input_request:
            continue
        folder = EXAMPLES / spec.message.__name__
        if not folder.is_dir():
            continue
        for req_file in sorted(folder.glob("*.json")):
            results = []
            for rtype in spec.results:
                rfolder = EXAMPLES / rtype.__name__
                results += sorted(rfolder.glob("*.json")) if rfolder.is_dir() else []
            cases.append(pytest.param(spec.method, req_file, results, id=f"{spec.method}:{req_file.stem}"))
    return cases


CASES = request_cases()


def strip_injected(params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    meta = {k: v for k, v in params.get("_meta", {}).items() if k not in INJECTED}
    if meta:
        params["_meta"] = meta
    else:
        params.pop("_meta", None)
    return params


@pytest.mark.skipif(not CASES, reason="the official example messages are not available")
@pytest.mark.parametrize(("method", "request_file", "result_files"), CASES)
async def test_examples_travel_unchanged(method: str, request_file: Path, result_files: list[Path]) -> None:
    example = json.loads(await trio.Path(request_file).read_text())
    sent_params = strip_injected(example.get("params", {}))
    seen: list[Any] = []
    answers = [json.loads(p.read_text()) for p in result_files] or [{"resultType": "complete"}]
    answers = [a.get("result", a) for a in answers]  # *ResultResponse files wrap the result
    next_answer = iter(answers)

    async def handler(ctx: RequestContext, params: Any) -> Any:
        seen.append(msgspec.to_builtins(params))
        return msgspec.json.decode(msgspec.json.encode(next(next_answer)))

    caps = {"tools": {}, "resources": {"subscribe": True}, "prompts": {}, "completions": {}, "logging": {}}
    a, b = open_memory_transport_pair()
    async with (
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities=caps,
            request_handlers={method: handler},
        ) as _srv,
        open_session(b, role="client", info={"name": "c", "version": "1"}, versions=[VERSION]) as cli,
    ):
        with trio.fail_after(5):
            await cli.connect()
            for answer in answers:
                result = await cli.request(method, sent_params)
                got = msgspec.to_builtins(result) if method != "server/discover" else answer
                assert got == answer
    if method != "server/discover":  # discover is answered by the core itself
        assert seen and all(strip_injected(s) == sent_params for s in seen)
