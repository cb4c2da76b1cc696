"""Hypothesis strategies for MCP traffic, valid and invalid.

Valid messages are derived from the generated types of a revision
(``mcp_trio.types.v*``) with :mod:`msgspec.inspect`: every request and
notification a client may send, with params that the revision's
``MethodSpec.message`` Struct accepts.  Invalid traffic is built from valid
messages by mutation (wrong types, missing or extra fields, bad envelopes and
ids) and from raw bytes (invalid UTF-8 and JSON, embedded newlines, deep
nesting, oversized lines, batches).

A generated message is a :class:`Item`: a JSON value (``obj``) or raw bytes
(``raw``).  Ids in ``obj`` are placeholders that the runner renumbers per
session (equal ids stay equal), so every campaign keeps the MCP rule that a
request id is never reused within a session, unless a probe duplicates an id
on purpose.
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec
import msgspec.inspect as mi
from hypothesis import HealthCheck
from hypothesis import strategies as st

from ..types import _versions

__all__ = [
    "CLIENT_META_KEYS",
    "Item",
    "advertised",
    "capability_cases",
    "cases",
    "gate",
    "client_methods",
    "from_type",
    "invalid_items",
    "stateless_meta",
    "valid_message",
    "valid_items",
]

MAX_DEPTH = 4  # nesting below which optional fields are left out and containers stay empty
MAX_INT = 2**53 - 1
CLIENT_META_KEYS = (
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
)
#: Requests a fuzzing client never sends: their answers are not bounded in time
#: (a subscription stream stays open until the client ends it).
LONG_LIVED = frozenset({"subscriptions/listen"})

EDGE_STRINGS = (
    "",
    "\x00",
    "\u2028\u2029",
    "\ufeff",
    "\uffff",
    "\U0001d518\U0001d52b\U0001d526",
    "\u202eevil",
    "a\u0301\u0301",
    "line\nbreak\r\n",
    '"\\',
    "\U0001f600" * 3,
)


@dataclass(frozen=True)
class Item:
    """One message to send: a JSON value (``obj``) or raw bytes (``raw``).

    ``note`` says what kind of probe it is (for transcripts and summaries).
    """

    obj: Any = None
    raw: bytes | None = None
    note: str = "valid"
    tags: tuple[str, ...] = field(default=())


# ----------------------------------------------------------------- basics

#: Every health check, for campaigns that generate big inputs on purpose.
ALL_HEALTH_CHECKS = cast("list[HealthCheck]", list(HealthCheck))  # (iterating skips deprecated ones)

_NO_SURROGATES: Any = ("Cs",)  # surrogate code points cannot be encoded

texts = st.one_of(
    st.text(st.characters(exclude_categories=_NO_SURROGATES), max_size=16),
    st.sampled_from(EDGE_STRINGS),
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-MAX_INT, MAX_INT),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(texts, children, max_size=3),
    max_leaves=8,
)


@functools.cache
def _info(tp: Any) -> Any:
    return mi.type_info(tp)


def from_type(tp: Any) -> st.SearchStrategy[Any]:
    """Values (plain JSON: dict, list, str, ...) that decode as ``tp``."""
    return _strategy(_info(tp), 0)


def _strategy(t: Any, depth: int) -> st.SearchStrategy[Any]:
    deep = depth >= MAX_DEPTH
    if isinstance(t, mi.StructType):
        return _struct(t, depth)
    if isinstance(t, mi.Metadata):
        return _strategy(t.type, depth)
    if isinstance(t, mi.LiteralType):
        return st.sampled_from(list(t.values))
    if isinstance(t, mi.EnumType):
        return st.sampled_from([m.value for m in t.cls])
    if isinstance(t, mi.UnionType):
        options = list(t.types)
        if deep:
            flat = [o for o in options if not isinstance(o, mi.StructType | mi.ListType | mi.DictType)]
            options = flat or options[:1]
        return st.one_of([_strategy(o, depth + 1) for o in options])
    if isinstance(t, mi.StrType):
        if t.pattern is not None:
            return st.from_regex(t.pattern, fullmatch=True)
        lo = t.min_length or 0
        hi = t.max_length if t.max_length is not None else max(lo, 16)
        return st.text(st.characters(exclude_categories=_NO_SURROGATES), min_size=lo, max_size=hi) | (
            st.sampled_from([s for s in EDGE_STRINGS if lo <= len(s) <= hi] or ["x" * lo])
        )
    if isinstance(t, mi.IntType):
        lo = t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else -MAX_INT)
        hi = t.le if t.le is not None else (t.lt - 1 if t.lt is not None else MAX_INT)
        return st.integers(lo, hi)
    if isinstance(t, mi.FloatType):
        return st.floats(
            min_value=t.ge if t.ge is not None else t.gt,
            max_value=t.le if t.le is not None else t.lt,
            exclude_min=t.ge is None and t.gt is not None,
            exclude_max=t.le is None and t.lt is not None,
            allow_nan=False,
            allow_infinity=False,
        ) | (st.integers(int(t.ge), int(t.le)) if t.ge is not None and t.le is not None else st.nothing())
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, mi.AnyType | mi.RawType):
        return json_scalars if deep else json_values
    if isinstance(t, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        shortest: int = getattr(t, "min_length", None) or 0
        longest: int | None = getattr(t, "max_length", None)
        most = min(longest if longest is not None else 3, shortest + (0 if deep else 3))
        return st.lists(_strategy(t.item_type, depth + 1), min_size=shortest, max_size=most)
    if isinstance(t, mi.DictType):
        keys = _strategy(t.key_type, depth + 1) if not isinstance(t.key_type, mi.StrType) else texts
        return st.dictionaries(keys, _strategy(t.value_type, depth + 1), max_size=0 if deep else 3)
    if isinstance(t, mi.TupleType):
        return st.tuples(*[_strategy(x, depth + 1) for x in t.item_types]).map(list)
    if isinstance(t, mi.BytesType):
        return st.binary(max_size=16).map(lambda b: base64.b64encode(b).decode())
    if isinstance(t, mi.DateTimeType):
        return st.datetimes(timezones=st.just(datetime.UTC)).map(lambda d: d.isoformat())
    raise TypeError(f"no strategy for {t!r}")


def _struct(t: Any, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for f in t.fields:
        if f.encode_name == "_meta":
            # _meta keys follow naming rules the types do not encode; keep it plain.
            strategy: st.SearchStrategy[Any] = st.just({})
        else:
            strategy = _strategy(f.type, depth + 1)
        if f.required:
            required[f.encode_name] = strategy
        elif depth < MAX_DEPTH:
            optional[f.encode_name] = strategy
    base = st.fixed_dictionaries(required, optional=optional)
    if t.tag_field is not None:
        return base.map(lambda d: {**d, t.tag_field: t.tag})
    return base


# --------------------------------------------------------------- messages


def client_methods(revision: str, kind: str | None = None) -> list[str]:
    """Methods a client may send in ``revision`` (optionally of one ``kind``)."""
    specs = _versions.methods_for(revision)
    return sorted(
        m
        for m, s in specs.items()
        if s.direction in ("client", "both")
        and not s.input_request
        and m not in LONG_LIVED
        and (kind is None or s.kind == kind)
    )


def stateless_meta(revision: str, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` a 2026-07-28 (stateless) request carries instead of a handshake."""
    return {
        CLIENT_META_KEYS[0]: revision,
        CLIENT_META_KEYS[1]: capabilities or {},
        CLIENT_META_KEYS[2]: {"name": "mcp-trio-fuzz", "version": "1"},
    }


@functools.cache
def _params_strategy(revision: str, method: str) -> st.SearchStrategy[dict[str, Any] | None]:
    spec = _versions.methods_for(revision)[method]
    if spec.params is None:
        return st.none()
    params = from_type(spec.params)
    if not spec.params_required:
        params = st.none() | params
    return params


ids = st.integers(0, 1000) | st.text("abcxyz0123456789", min_size=1, max_size=4)


def valid_message(revision: str, method: str, id_: Any = None) -> st.SearchStrategy[dict[str, Any]]:
    """Messages of ``method`` that the revision's types accept (``id_`` for a request)."""
    spec = _versions.methods_for(revision)[method]
    stateless = _versions.is_stateless(revision)

    def build(params: dict[str, Any] | None, rid: Any) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0"}
        if spec.kind == "request":
            msg["id"] = rid
        msg["method"] = method
        if stateless and spec.kind == "request":
            params = dict(params or {})
            params["_meta"] = stateless_meta(revision)
        if params is not None:
            msg["params"] = params
        return msg

    return st.builds(build, _params_strategy(revision, method), st.just(id_) if id_ is not None else ids)


def accepts(revision: str, message: Any) -> bool:
    """Whether the revision's types accept ``message`` (a JSON value) as a client message."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return False
    if message.get("jsonrpc") != "2.0":  # (the Structs default it)
        return False
    spec = _versions.methods_for(revision).get(message["method"])
    if spec is None:
        return False
    try:
        msgspec.json.decode(json.dumps(message).encode(), type=spec.message)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return False
    return ("id" in message) == (spec.kind == "request")


def valid_items(revision: str) -> st.SearchStrategy[Item]:
    """Any request or notification a client may send in ``revision``, with valid params."""
    methods = client_methods(revision)
    return st.sampled_from(methods).flatmap(lambda m: valid_message(revision, m)).map(Item)


# ---------------------------------------------------------------- invalid

#: The wrong values a mutated field takes (``wrong_type``).
WRONG_VALUES: tuple[Any, ...] = (None, True, 1.5, -1, "x", [], {}, [1, [2]], {"a": {"b": None}}, 2**64)
_WRONG = st.sampled_from(WRONG_VALUES)
_BAD_IDS: st.SearchStrategy[Any] = st.sampled_from(
    [None, True, False, 1.5, -0.0, 2**64, 10**30, -(2**63) - 1, [], {}, [1]]
)
#: The request ids the corpora send, one of each kind that is no string or integer (MCP: "Requests
#: MUST include a string or integer ID"; "Unlike base JSON-RPC, the ID MUST NOT be null").
BAD_IDS: tuple[Any, ...] = (None, True, 1.5, {}, [])
#: How params (or a result) are mutated; the generators draw one, the corpora take each.
PARAMS_MUTATIONS = ("wrong_type", "missing", "extra", "params_not_object")
#: What params that are not an object are instead (``params_not_object``).
NOT_OBJECTS: tuple[Any, ...] = ([], "params", 7, True, [{"name": "x"}])


def mutate_params(
    msg: dict[str, Any],
    choice: str,
    *,
    key: str | None = None,
    wrong: Any = None,
    not_object: Any = NOT_OBJECTS[1],
    extra: tuple[str, Any] = ("x-fuzz", 1),
) -> tuple[dict[str, Any], str]:
    """``msg`` with its ``params`` mutated by ``choice`` (one of :data:`PARAMS_MUTATIONS`), and the
    mutation done: ``key`` (by default the first, sorted) gets ``wrong`` or goes, or ``extra`` is
    added; params that are no object or empty become ``not_object`` (``params_not_object``)."""
    msg = dict(msg)
    params = msg.get("params")
    if choice == "params_not_object" or not isinstance(params, dict) or not params:
        msg["params"] = not_object
        return msg, "params_not_object"
    params = dict(params)
    key = key if key is not None else sorted(params)[0]
    if choice == "wrong_type":
        params[key] = wrong
    elif choice == "missing":
        del params[key]
    else:
        params[extra[0]] = extra[1]
    msg["params"] = params
    return msg, choice


def _mutate_params(draw: Any, msg: dict[str, Any]) -> tuple[dict[str, Any], str]:
    params = msg.get("params")
    choice = draw(st.sampled_from(PARAMS_MUTATIONS))
    if choice == "params_not_object" or not isinstance(params, dict) or not params:
        return mutate_params(msg, choice, not_object=draw(st.sampled_from(NOT_OBJECTS)))
    key = draw(st.sampled_from(sorted(params)))
    if choice == "wrong_type":
        return mutate_params(msg, choice, key=key, wrong=draw(_WRONG))
    if choice == "missing":
        return mutate_params(msg, choice, key=key)
    return mutate_params(msg, choice, key=key, extra=(draw(texts), draw(json_values)))


@st.composite
def _mutated(draw: Any, revision: str) -> Item:
    methods = client_methods(revision)
    method = draw(st.sampled_from(methods))
    msg = dict(draw(valid_message(revision, method)))
    kind = draw(
        st.sampled_from(
            [
                "params",
                "jsonrpc",
                "bad_id",
                "method_type",
                "unknown_method",
                "as_other_kind",
                "extra_envelope",
                "no_method",
            ]
        )
    )
    if kind == "params":
        msg, note = _mutate_params(draw, msg)
        return Item(msg, note=f"params:{note}")
    if kind == "jsonrpc":
        value = draw(st.sampled_from(["1.0", "2", 2.0, None, "", "2.0 ", "MISSING"]))
        if value == "MISSING":
            del msg["jsonrpc"]
        else:
            msg["jsonrpc"] = value
        return Item(msg, note="wrong_jsonrpc")
    if kind == "bad_id":
        msg["id"] = draw(_BAD_IDS)
        return Item(msg, note="bad_id")
    if kind == "method_type":
        msg["method"] = draw(st.sampled_from([None, 1, ["tools/list"], {"m": 1}, True]))
        return Item(msg, note="method_not_a_string")
    if kind == "unknown_method":
        msg["method"] = draw(
            st.sampled_from(["nope", "tools/nope", "", "TOOLS/LIST", "rpc.discover"]) | texts
        )
        msg.setdefault("id", draw(ids))
        return Item(msg, note="unknown_method")
    if kind == "as_other_kind":
        # a notification that looks like a request, or a request sent without an id
        if "id" in msg:
            del msg["id"]
            return Item(msg, note="request_without_id")
        msg["id"] = draw(ids)
        return Item(msg, note="notification_with_id")
    if kind == "extra_envelope":
        msg[draw(st.sampled_from(["extra", "result", "error", "params2", "ID"]))] = draw(json_values)
        return Item(msg, note="extra_envelope_member")
    msg.pop("method", None)
    return Item(msg, note="no_method")


def _deep(depth: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":'
        + b"[" * depth
        + b"]" * depth
        + b"}}}"
    )


@st.composite
def _raw(draw: Any, revision: str) -> Item:
    kind = draw(
        st.sampled_from(
            [
                "not_json",
                "invalid_utf8",
                "embedded_newline",
                "deep",
                "oversized",
                "lone_surrogate",
                "empty_batch",
                "scalar",
            ]
        )
    )
    if kind == "not_json":
        raw = draw(st.sampled_from([b"{", b"{not json", b"null}", b'{"jsonrpc":"2.0",}', b"\x00", b"[1,2"]))
        return Item(raw=raw, note="parse_error")
    if kind == "invalid_utf8":
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]))
        return Item(
            raw=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"' + bad + b'"}}}',
            note="invalid_utf8",
        )
    if kind == "embedded_newline":
        msg = draw(valid_message(revision, draw(st.sampled_from(client_methods(revision, "request")))))
        return Item(raw=json.dumps(msg, indent=1).encode(), note="embedded_newline")
    if kind == "deep":
        return Item(raw=_deep(draw(st.sampled_from([64, 1000, 100_000]))), note="deep_nesting")
    if kind == "oversized":
        size = draw(st.sampled_from([70_000, 1_100_000, 5_000_000]))
        method = "ping" if not _versions.is_stateless(revision) else "tools/list"
        params: dict[str, Any] = {"_meta": {"padding": "x" * size}}
        if _versions.is_stateless(revision):
            params["_meta"].update(stateless_meta(revision))
        return Item({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, note=f"oversized:{size}")
    if kind == "lone_surrogate":
        return Item(
            raw=b'{"jsonrpc":"2.0","method":"notifications/x\\ud800","params":{}}', note="lone_surrogate"
        )
    if kind == "empty_batch":
        return Item([], note="empty_batch")
    return Item(draw(st.sampled_from([1, "x", None, True, [1, 2]])), note="not_an_object")


@st.composite
def _batch(draw: Any, revision: str) -> Item:
    inner = draw(st.lists(valid_items(revision) | _mutated(revision), min_size=1, max_size=4))
    return Item([i.obj for i in inner], note="batch")


@st.composite
def _duplicate(draw: Any, revision: str) -> list[Item]:
    method = draw(st.sampled_from(client_methods(revision, "request")))
    first = draw(valid_message(revision, method, id_=7))
    second = draw(valid_message(revision, draw(st.sampled_from(client_methods(revision, "request"))), id_=7))
    return [Item(first, note="duplicate_id"), Item(second, note="duplicate_id")]


def known_bad(revision: str) -> list[list[Item]]:
    """The ``invalid`` campaign's corpus: every malformed shape the generators draw (and the
    oracles judge), each once, in a fixed order, run before hypothesis generates anything, so a
    short budget still sends each of them.  Each case is one message (two for a reused id)."""
    stateless = _versions.is_stateless(revision)
    method = "server/discover" if stateless else "ping"

    def request(**changes: Any) -> dict[str, Any]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if stateless:
            msg["params"] = {"_meta": stateless_meta(revision)}
        for key, value in changes.items():
            if value is _DROP:
                msg.pop(key, None)
            else:
                msg[key] = value
        return msg

    listing = "tools/list" if "tools/list" in _versions.methods_for(revision) else method
    not_objects: tuple[Any, ...] = (True, [], "params", 7)
    out: list[Item] = [
        *(Item(raw=raw, note="parse_error") for raw in (b"{", b'{"jsonrpc":"2.0",}', b"[1,2")),
        Item(
            raw=b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\xff"}}}',
            note="invalid_utf8",
        ),
        Item(raw=json.dumps(request(), indent=1).encode(), note="embedded_newline"),
        Item(raw=_deep(1000), note="deep_nesting"),
        Item(raw=b'{"jsonrpc":"2.0","method":"notifications/x\\ud800","params":{}}', note="lone_surrogate"),
        Item([], note="empty_batch"),
        *(Item(value, note="not_an_object") for value in (1, "x", None, True)),
        Item([request(id=1), request(id=2)], note="batch"),
        *(Item(request(jsonrpc=v), note="wrong_jsonrpc") for v in ("1.0", 2.0, _DROP)),
        *(Item(request(id=v), note="bad_id") for v in BAD_IDS),
        Item(request(method=1), note="method_not_a_string"),
        Item(request(method="fuzz/no-such-method"), note="unknown_method"),
        Item(request(method=listing, id=_DROP), note="request_without_id"),
        Item({"jsonrpc": "2.0", "id": 1, "method": "notifications/initialized"}, note="notification_with_id"),
        Item(request(extra=1), note="extra_envelope_member"),
        Item(request(method=_DROP), note="no_method"),
        *(Item(request(params=v), note="params:params_not_object") for v in not_objects),
    ]
    cases: list[list[Item]] = [[item] for item in out]
    if "tools/call" in _versions.methods_for(revision):
        call = request(method="tools/call")
        call["params"] = {**call.get("params", {}), "name": 1}
        cases.append([Item(call, note="params:wrong_type")])
        missing = request(method="tools/call")
        missing["params"] = {k: v for k, v in missing.get("params", {}).items() if k != "name"}
        cases.append([Item(missing, note="params:missing")])
    cases.append([Item(request(id=7), note="duplicate_id"), Item(request(id=7), note="duplicate_id")])
    return cases


_DROP = object()  # (known_bad: a member left out)


# ----------------------------------------------------------- capabilities


def gate(revision: str, method: str) -> tuple[str, ...] | None:
    """The capability path that gates ``method``: the receiver's for a request (``("prompts",)``
    for ``prompts/get``), the sender's for a notification (``("roots", "listChanged")``).

    The registry leaves ``tasks/get`` and ``tasks/result`` ungated (any task a peer created can
    be polled), but a peer without the ``tasks`` capability has no tasks at all: those need it."""
    spec = _versions.methods_for(revision).get(method)
    if spec is None:
        return None
    if spec.capability is None and method.startswith("tasks/") and spec.kind == "request":
        return ("tasks",)
    return spec.capability


def advertised(capabilities: Any, path: tuple[str, ...]) -> bool:
    """Whether ``capabilities`` (an initialize or discover answer's object) grants ``path``:
    every step present, a sub-capability flag not ``false``."""
    node = capabilities
    for key in path:
        if not isinstance(node, dict) or key not in node or node[key] is None or node[key] is False:
            return False
        node = node[key]
    return True


def unadvertised_methods(
    revision: str, receiver: dict[str, Any], sender: dict[str, Any], *, direction: str = "client"
) -> list[str]:
    """Methods a ``direction`` peer may send in ``revision`` that a negotiation with these
    capabilities rules out: requests gated by a ``receiver`` capability it did not advertise,
    notifications gated by a ``sender`` capability the sender did not declare."""
    out = []
    for method, spec in sorted(_versions.methods_for(revision).items()):
        if spec.direction not in (direction, "both") or spec.input_request or method in LONG_LIVED:
            continue
        path = gate(revision, method)
        if path is None:
            continue
        caps = receiver if spec.kind == "request" else sender
        if not advertised(caps, path):
            out.append(method)
    return out


def capability_cases(revision: str, methods: list[str]) -> st.SearchStrategy[list[Item]]:
    """1-3 messages of different ``methods`` (see :func:`unadvertised_methods`), valid params,
    sometimes with a valid message of the revision around them (the session must go on)."""
    if not methods:
        raise ValueError("no capability to violate")

    @st.composite
    def build(draw: Any) -> list[Item]:
        chosen = draw(st.permutations(methods))[: draw(st.integers(1, min(3, len(methods))))]
        items = [Item(draw(valid_message(revision, m)), note=f"capability:{m}") for m in chosen]
        if draw(st.booleans()):
            items.insert(draw(st.integers(0, len(items))), draw(valid_items(revision)))
        return items

    return build()


def invalid_items(revision: str) -> st.SearchStrategy[list[Item]]:
    """Invalid traffic for ``revision``: each draw is one or more items sent back to back."""
    return st.one_of(
        _mutated(revision).map(lambda i: [i]),
        _raw(revision).map(lambda i: [i]),
        _batch(revision).map(lambda i: [i]),
        _duplicate(revision),
    )


def cases(revision: str, campaign: str) -> st.SearchStrategy[list[Item]]:
    """A case: the items one example sends back to back before the oracles look."""
    valid = valid_items(revision)
    if campaign == "valid":
        return _spread(revision).flatmap(lambda items: _with_cancels(revision, items))
    if campaign == "invalid":
        return st.lists(invalid_items(revision) | valid.map(lambda i: [i]), min_size=1, max_size=3).map(
            lambda groups: [i for g in groups for i in g]
        )
    if campaign == "lifecycle":
        # sent on a fresh session, before (or instead of) the handshake
        return st.lists(valid, min_size=1, max_size=3)
    raise ValueError(f"unknown campaign {campaign!r}")


@st.composite
def _spread(draw: Any, revision: str, max_size: int = 5) -> list[Item]:
    """1 to ``max_size`` valid messages of different methods (a shuffled registry spreads the
    draws over every method better than independent choices do)."""
    methods = draw(st.permutations(client_methods(revision)))
    count = draw(st.integers(1, max_size))
    return [Item(draw(valid_message(revision, m))) for m in methods[:count]]


def _with_cancels(revision: str, items: list[Item]) -> st.SearchStrategy[list[Item]]:
    """Sometimes cancel a request of the case right after sending it (a race with its answer)."""
    requests = [i for i in items if isinstance(i.obj, dict) and "id" in i.obj]
    if not requests or "notifications/cancelled" not in _versions.methods_for(revision):
        return st.just(items)

    def add(choice: int | None) -> list[Item]:
        if choice is None:
            return items
        chosen = requests[choice % len(requests)]
        target = chosen.obj["id"]
        where = next(n for n, i in enumerate(items) if i is chosen)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": target, "reason": "fuzz"},
        }
        return [*items, Item(cancel, note="cancel", tags=("cancels", str(where)))]

    return (st.none() | st.integers(0, 10)).map(add)
