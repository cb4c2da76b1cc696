"""The full wire path of typical MCP messages: ours against the official SDK's.

"Full wire path" means what each implementation does with a message on the
wire, not just the model: decoding parses the JSON-RPC envelope and validates
the payload into the typed object (params of a request, result of a
response); encoding turns the typed object back into a JSON-RPC message.

* ours: what the session core does. A request of a settled session: the
  server core's ``_jsonrpc.request_decoder`` for the revision (envelope and
  params in one pass; for a stateless revision, then the ``_meta`` checks);
  ``initialize`` likewise, as a server whose newest revision is the case's;
  ``server/discover``: ``_jsonrpc.decode_envelope``, the ``_meta`` peek, the
  params decoder. The answer to the one pending request:
  ``_jsonrpc.response_decoder`` of its result type (one pass). Encoding:
  ``_jsonrpc.encode_request`` / ``encode_response`` of the Struct.
* SDK (``mcp`` 2.x): ``jsonrpc_message_adapter.validate_json`` then
  ``Model.model_validate(..., by_name=False)`` (what its dispatcher and
  sessions do); ``model_dump(by_alias=True, mode="json", exclude_none=True)``
  into a ``JSONRPCRequest`` / ``JSONRPCResponse``, then
  ``model_dump_json(by_alias=True, exclude_unset=True)`` (what its transports
  write).

The messages are those of ``bench_codec.message_set`` (initialize,
tools/call, a mixed-content CallToolResult, tools/list with 100 tools) for
every revision; the SDK is run on the ones its models accept.

Run ``python -m benchmarks.wire_codec [--quick] [--json]`` (needs ``mcp`` for
the comparison).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.bench_codec import REVISIONS, Case, message_set, time_codec
from mcp_trio import _jsonrpc as rpc
from mcp_trio._core._requests import _meta_peek
from mcp_trio._core._session import SessionCore
from mcp_trio._core._shared import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from mcp_trio.types import _versions

Codec = tuple[Callable[[bytes], Any], Callable[[Any], Any]]

_METHOD_OF = {
    "InitializeRequest": "initialize",
    "DiscoverRequest": "server/discover",
    "CallToolRequest": "tools/call",
}


@dataclass
class Row:
    revision: str
    message: str
    size: int
    ours_decode_us: float
    ours_encode_us: float
    sdk_decode_us: float | None = None
    sdk_encode_us: float | None = None

    @property
    def ours_us(self) -> float:
        return self.ours_decode_us + self.ours_encode_us

    @property
    def sdk_us(self) -> float | None:
        if self.sdk_decode_us is None or self.sdk_encode_us is None:
            return None
        return self.sdk_decode_us + self.sdk_encode_us

    @property
    def ratio(self) -> float | None:
        sdk = self.sdk_us
        return None if sdk is None else sdk / self.ours_us


def wire_message(case: Case) -> tuple[bytes, str | None]:
    """The message as it travels (a result is wrapped in a response) and its method."""
    method = _METHOD_OF.get(case.type_name)
    if method is not None:
        return case.payload, method
    return b'{"jsonrpc":"2.0","id":7,"result":' + case.payload + b"}", None


_SERVER = SessionCore(
    "server",
    info={"name": "bench", "version": "1"},
    capabilities={"tools": {}, "resources": {}, "prompts": {}, "logging": {}, "completions": {}},
)


def _request_decoder(revision: str, method: str) -> Callable[[bytes], Any]:
    """How the server core decodes a request of ``method``: in one pass, except
    ``server/discover`` (envelope, ``_meta`` peek, params: it opens a stateless
    session, before the revision is settled)."""
    spec = _versions.module_for(revision).METHODS[method]
    if method == "server/discover":
        params = _versions.decoder_for(spec.params)

        def decode_discover(raw: bytes) -> Any:
            envelope = rpc.decode_envelope(raw)
            _meta_peek.decode(envelope.params)
            return envelope.id, params.decode(envelope.params)

        return decode_discover
    if method == "initialize":  # as a server whose newest revision is ``revision`` does
        one_pass = rpc.request_decoder({"initialize": spec.params})
    else:
        one_pass = _SERVER.gate.decoder(revision)
        assert one_pass is not None
    stateless = _versions.is_stateless(revision)

    def decode(raw: bytes) -> Any:
        envelope = one_pass.decode(raw)
        if stateless:  # the core checks _meta's revision and capabilities
            meta = envelope.params.meta
            meta.get(META_PROTOCOL_VERSION)
            meta.get(META_CLIENT_CAPABILITIES)
        return envelope.id, envelope.params

    return decode


def ours(case: Case) -> Codec:
    module = _versions.module_for(case.revision)
    data, method = wire_message(case)
    if method is not None:
        decode = _request_decoder(case.revision, method)

        def encode(obj: Any) -> bytes:
            id, value = obj
            return rpc.encode_request(id, method, value)

        return decode, encode
    result = rpc.response_decoder(getattr(module, case.type_name))

    def decode_result(raw: bytes) -> Any:
        envelope = result.decode(raw)
        return envelope.id, envelope.result

    def encode_result(obj: Any) -> bytes:
        id, value = obj
        return rpc.encode_response(id, value)

    return decode_result, encode_result


def sdk(case: Case) -> Codec | None:
    """The SDK's codec for ``case``, or ``None`` (no SDK, or its models refuse the message)."""
    try:
        import mcp_types as types
    except ImportError:
        return None
    data, method = wire_message(case)
    adapter = types.jsonrpc_message_adapter
    if method is not None:
        model = getattr(types, case.type_name + "Params", None)
    else:
        model = getattr(types, case.type_name, None)
    if model is None:
        return None

    if method is not None:

        def decode(raw: bytes) -> Any:
            message = adapter.validate_json(raw, by_name=False)
            return message.id, model.model_validate(message.params, by_name=False)

        def encode(obj: Any) -> bytes:
            id, value = obj
            params = value.model_dump(by_alias=True, mode="json", exclude_none=True)
            request = types.JSONRPCRequest(jsonrpc="2.0", id=id, method=method, params=params)
            return request.model_dump_json(by_alias=True, exclude_unset=True).encode()

        codec: Codec = (decode, encode)
    else:

        def decode_result(raw: bytes) -> Any:
            message = adapter.validate_json(raw, by_name=False)
            return message.id, model.model_validate(message.result, by_name=False)

        def encode_result(obj: Any) -> bytes:
            id, value = obj
            result = value.model_dump(by_alias=True, mode="json", exclude_none=True)
            response = types.JSONRPCResponse(jsonrpc="2.0", id=id, result=result)
            return response.model_dump_json(by_alias=True, exclude_unset=True).encode()

        codec = (decode_result, encode_result)
    try:
        codec[1](codec[0](data))
    except Exception:  # noqa: BLE001 - the SDK does not model this revision's shape
        return None
    return codec


def measure(
    revisions: tuple[str, ...] = REVISIONS,
    *,
    repeat: int = 5,
    target: float = 0.02,
    with_sdk: bool = True,
    passes: int = 1,
) -> list[Row]:
    """Time every message, ours then the SDK's, ``passes`` times over the
    whole set; each figure is the best of all its timings.  Passes spread
    each row's timings over the run, so a burst of load from elsewhere on
    the machine cannot spoil one row (and one side of its ratio) alone."""
    rows: dict[tuple[str, str], Row] = {}
    for _ in range(passes):
        for revision in revisions:
            for case in message_set(revision):
                data, _ = wire_message(case)
                decode, encode = ours(case)
                dec, enc = time_codec(decode, encode, data, repeat=repeat, target=target)
                key = (revision, case.name)
                row = rows.get(key)
                if row is None:
                    row = rows[key] = Row(revision, case.name, len(data), dec, enc)
                else:
                    row.ours_decode_us = min(row.ours_decode_us, dec)
                    row.ours_encode_us = min(row.ours_encode_us, enc)
                theirs = sdk(case) if with_sdk else None
                if theirs is not None:
                    dec, enc = time_codec(*theirs, data, repeat=repeat, target=target)
                    old_dec, old_enc = row.sdk_decode_us, row.sdk_encode_us
                    row.sdk_decode_us = dec if old_dec is None else min(old_dec, dec)
                    row.sdk_encode_us = enc if old_enc is None else min(old_enc, enc)
    return list(rows.values())


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def summary(rows: list[Row]) -> dict[str, Any]:
    ratios = [r.ratio for r in rows if r.ratio is not None]
    return {
        "rows": [{**asdict(r), "ours_us": r.ours_us, "sdk_us": r.sdk_us, "ratio": r.ratio} for r in rows],
        "geomean_ratio": geomean(ratios),
        "min_ratio": min(ratios) if ratios else float("nan"),
        "compared": len(ratios),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter timing runs")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    repeat, target, passes = (3, 0.01, 1) if args.quick else (5, 0.02, 3)
    result = summary(measure(repeat=repeat, target=target, passes=passes))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{'revision':<11} {'message':<24} {'bytes':>6} {'ours µs':>9} {'sdk µs':>9} {'×':>6}")
    for row in result["rows"]:
        sdk_us = "n/a" if row["sdk_us"] is None else f"{row['sdk_us']:.1f}"
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.1f}"
        print(
            f"{row['revision']:<11} {row['message']:<24} {row['size']:>6} "
            f"{row['ours_us']:>9.1f} {sdk_us:>9} {ratio:>6}"
        )
    print(f"geometric mean × {result['geomean_ratio']:.1f}, lowest × {result['min_ratio']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
