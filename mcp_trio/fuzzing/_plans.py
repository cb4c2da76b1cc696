"""What the fuzzing server does with a client: the plans hypothesis draws, and the valid
values it answers with when a plan says nothing.

A :data:`Plan` is plain JSON (a transcript holds it): ``answers``, per method, how its
first, second ... call is answered, and ``steps``, the server-to-client messages sent on the
response stream of the client's n-th request (see :mod:`.client`).  :func:`plans` draws them
for the ``client`` campaign, :func:`capability_plans` for the client ``capabilities`` one;
:func:`known_bad_plans` and :func:`capability_corpus` are their corpora, run first: each shape
once, built from the same lists the strategies draw from.
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi
from hypothesis import strategies as st

from ..types import _versions
from .strategies import (
    BAD_IDS,
    EDGE_STRINGS,
    NOT_OBJECTS,
    PARAMS_MUTATIONS,
    _mutate_params,
    client_methods,
    from_type,
    json_values,
    mutate_params,
    texts,
    unadvertised_methods,
    valid_message,
)

__all__ = [
    "Plan",
    "capability_corpus",
    "capability_plans",
    "default_result",
    "initialize_result",
    "known_bad_plans",
    "minimal",
    "plans",
    "server_methods",
    "unnamed_injections",
]

Plan = dict[str, Any]
ERROR_CODES = (-32700, -32600, -32601, -32602, -32603, -32000, -32002, -1, 0, 1, 2**31)
ANSWER_KINDS = ("result", "mutated", "error", "duplicate", "unknown-id", "junk-event")
#: What a ``junk-event`` answer sends before the valid one: SSE data that is no JSON-RPC message.
JUNK_EVENTS = ("{", "not json", "[]", "null", '{"jsonrpc":"2.0"}', *EDGE_STRINGS[:3])
#: Methods of the requests an ``unknown-method`` step sends: no client has them.
UNKNOWN_METHODS = ("nope", "tools/list", "fuzz/unknown", "")


# ------------------------------------------------------------------ values


def minimal(tp: Any) -> Any:
    """The smallest value that decodes as ``tp``: required fields only, empty containers.

    It is what the fuzzing server answers when the plan says nothing, so a client
    always gets a valid answer that does not depend on hypothesis."""
    return _minimal(mi.type_info(tp))


def _minimal(t: Any) -> Any:
    if isinstance(t, mi.Metadata):
        return _minimal(t.type)
    if isinstance(t, mi.StructType):
        out = {f.encode_name: _minimal(f.type) for f in t.fields if f.required}
        if t.tag_field is not None:
            out[t.tag_field] = t.tag
        return out
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.EnumType):
        return next(iter(t.cls)).value
    if isinstance(t, mi.UnionType):
        simple = [o for o in t.types if not isinstance(o, mi.NoneType)]
        return _minimal(simple[0] if simple else t.types[0])
    if isinstance(t, mi.StrType):
        return "x" * (t.min_length or 0)
    if isinstance(t, mi.IntType | mi.FloatType):
        return t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else 0)
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        return [_minimal(t.item_type) for _ in range(getattr(t, "min_length", None) or 0)]
    if isinstance(t, mi.DictType):
        return {}
    if isinstance(t, mi.TupleType):
        return [_minimal(x) for x in t.item_types]
    return None


def default_result(revision: str, method: str) -> Any:
    spec = _versions.methods_for(revision).get(method)
    return minimal(spec.results[0]) if spec is not None and spec.results else {}


def server_methods(revision: str, kind: str) -> list[str]:
    """Methods a server may send to a client in ``revision``."""
    return sorted(
        m
        for m, s in _versions.methods_for(revision).items()
        if s.direction in ("server", "both") and s.kind == kind and not s.input_request
    )


def initialize_result(revision: str) -> dict[str, Any]:
    return {
        "protocolVersion": revision,
        "capabilities": {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
            "completions": {},
        },
        "serverInfo": {"name": "mcp-trio-fuzz-server", "version": "1"},
    }


# -------------------------------------------------------------- strategies


def _result_strategy(revision: str, method: str) -> st.SearchStrategy[Any]:
    spec = _versions.methods_for(revision)[method]
    return st.one_of([from_type(tp) for tp in spec.results]) if spec.results else st.just({})


@st.composite
def _answer(draw: Any, revision: str, method: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(ANSWER_KINDS))
    if kind == "result":
        return {"kind": "result", "result": draw(_result_strategy(revision, method))}
    if kind == "mutated":
        result = draw(_result_strategy(revision, method))
        mutated, note = _mutate_params(draw, {"params": result})
        return {"kind": "mutated", "result": mutated["params"], "note": note}
    if kind == "error":
        error: dict[str, Any] = {"code": draw(st.sampled_from(ERROR_CODES)), "message": draw(texts)}
        if draw(st.booleans()):
            error["data"] = draw(json_values)
        return {"kind": "error", "error": error}
    if kind == "junk-event":
        return {"kind": kind, "text": draw(st.sampled_from(JUNK_EVENTS))}
    return {"kind": kind}


@st.composite
def _injection(draw: Any, revision: str) -> dict[str, Any]:
    requests, notes = server_methods(revision, "request"), server_methods(revision, "notification")
    # (2026-07-28 has no server-to-client JSON-RPC requests: notifications only)
    kind = draw(
        st.sampled_from(
            ["request", "notification", "mutated", "unknown-method", "unnamed"]
            if requests
            else ["notification", "mutated"]
        )
    )
    if kind == "unnamed":
        # each fixed shape, or a batch of valid requests and notifications drawn here
        if draw(st.booleans()):
            fixed: dict[str, Any] = draw(st.sampled_from(unnamed_injections(revision)))
            return fixed
        members = st.sampled_from(requests + notes).flatmap(lambda m: valid_message(revision, m, id_=1))
        batch: list[Any] = draw(st.lists(members, min_size=1, max_size=3))
        return {"note": "batch", "message": batch}
    if kind == "unknown-method":
        method = draw(st.sampled_from(UNKNOWN_METHODS))
        return {"note": "unknown_method", "message": {"jsonrpc": "2.0", "id": 1, "method": method}}
    method = draw(
        st.sampled_from(
            notes if kind == "notification" else requests if kind == "request" else requests + notes
        )
    )
    msg = dict(draw(valid_message(revision, method, id_=1)))
    if kind == "mutated":
        msg, note = _mutate_params(draw, msg)
        return {"note": f"params:{note}", "message": msg}
    return {"note": "valid", "message": msg}


def plans(revision: str) -> st.SearchStrategy[Plan]:
    """What the fuzzing server does with one client (see the module docstring)."""
    methods = answered_methods(revision)
    per_method = st.sampled_from(methods).flatmap(
        lambda m: st.tuples(st.just(m), st.lists(_answer(revision, m), min_size=1, max_size=2))
    )
    answers = st.lists(per_method, max_size=4, unique_by=lambda mt: mt[0]).map(dict)
    steps = st.lists(st.lists(_injection(revision), max_size=3), max_size=4)
    return st.fixed_dictionaries({"answers": answers, "steps": steps})


def capability_plans(revision: str) -> st.SearchStrategy[Plan]:
    """Plans of the client ``capabilities`` campaign: steps of server-to-client requests that
    need a client capability (sampling, elicitation, roots, tasks), valid params.  The server
    sends only those the client did not declare in its initialize; calls are answered validly."""
    methods = unadvertised_methods(
        revision, {}, initialize_result(revision)["capabilities"], direction="server"
    )
    probe = st.sampled_from(methods).flatmap(
        lambda m: valid_message(revision, m, id_=1).map(
            lambda msg: {"note": f"capability:{m}", "message": msg}
        )
    )
    steps = st.lists(st.lists(probe, min_size=1, max_size=3), min_size=1, max_size=3)
    return st.fixed_dictionaries({"answers": st.just({}), "steps": steps})


# ------------------------------------------------------------------ corpora


def known_bad_plans(revision: str) -> list[Plan]:
    """The ``client`` campaign's corpus: every malformed shape :func:`plans` draws, each once, in
    a fixed order, run before hypothesis draws any plan (so a short budget still serves each).
    A step shape is sent on the response stream of the client's first request after the handshake
    (the ping behind it as always): each unknown method, each message no valid id names
    (:func:`unnamed_injections`: batches, bad ids), each mutation of a request's and of a
    notification's params (every value params that are no object take, for a request).  An
    answer shape answers every method the client may call: twice, under an id never sent first,
    after each junk event, with each mutation of the method's result, with each error code."""
    requests, notifications = server_methods(revision, "request"), server_methods(revision, "notification")
    out: list[Plan] = []

    def step(note: str, message: dict[str, Any]) -> None:
        out.append({"answers": {}, "steps": [[{"note": note, "message": message}]]})

    if requests:  # (2026-07-28 has no server-to-client JSON-RPC requests)
        for method in UNKNOWN_METHODS:
            step("unknown_method", {"jsonrpc": "2.0", "id": 1, "method": method})
        out += [{"answers": {}, "steps": [[inj]]} for inj in unnamed_injections(revision)]
    for candidates, values in ((requests, NOT_OBJECTS), (notifications, NOT_OBJECTS[1:2])):
        if not candidates:
            continue
        # (params that are no object go to ping when there is one: every client answers it)
        messages = [_minimal_message(revision, m) for m in sorted(candidates, key=lambda m: m != "ping")]
        with_params = next((m for m in messages if m.get("params")), messages[0])
        for choice in PARAMS_MUTATIONS:
            if choice == "params_not_object":
                for value in values:
                    msg, note = mutate_params(messages[0], choice, not_object=value)
                    step(f"params:{note}", msg)
            else:
                msg, note = mutate_params(with_params, choice)
                step(f"params:{note}", msg)
    methods = answered_methods(revision)

    def answering(answer: Any) -> None:
        out.append({"answers": {m: [answer(m)] for m in methods}, "steps": []})

    def mutated(choice: str) -> Any:
        def answer(method: str) -> dict[str, Any]:
            msg, note = mutate_params({"params": default_result(revision, method)}, choice)
            return {"kind": "mutated", "result": msg["params"], "note": note}

        return answer

    answering(lambda m: {"kind": "duplicate"})
    answering(lambda m: {"kind": "unknown-id"})
    for text in JUNK_EVENTS:
        answering(lambda m, text=text: {"kind": "junk-event", "text": text})
    for choice in PARAMS_MUTATIONS:
        answering(mutated(choice))
    for code in ERROR_CODES:
        answering(lambda m, code=code: {"kind": "error", "error": {"code": code, "message": "fuzz"}})
    return out


def unnamed_injections(revision: str) -> list[dict[str, Any]]:
    """The step messages no valid request id names, each once: a JSON-RPC batch (a ping, a
    notification, a ping), the same with a member whose id is ``true``, an empty batch, a ping
    with each id that is no string or integer, and a ping without an id (a notification, whatever
    its method).  Batches exist in 2025-03-26 only ("MCP implementations MAY support sending
    JSON-RPC batches, but MUST support receiving JSON-RPC batches"); elsewhere a client may refuse
    one whole.  Empty for a revision without server-to-client requests (2026-07-28)."""
    requests = server_methods(revision, "request")
    if not requests:
        return []
    ping = _minimal_message(revision, "ping")
    notes = server_methods(revision, "notification")
    note = _minimal_message(
        revision, "notifications/message" if "notifications/message" in notes else notes[0]
    )
    out: list[dict[str, Any]] = [
        {"note": "batch", "message": [ping, note, ping]},
        {"note": "batch", "message": [ping, {**ping, "id": True}]},
        {"note": "empty_batch", "message": []},
        *({"note": "bad_id", "message": {**ping, "id": value}} for value in BAD_IDS),
    ]
    out.append({"note": "request_without_id", "message": {k: v for k, v in ping.items() if k != "id"}})
    return out


def capability_corpus(revision: str) -> list[Plan]:
    """The client ``capabilities`` campaign's corpus: each request that needs a client capability,
    once, alone, with the smallest valid params (the server sends it only when the client did not
    declare the capability)."""
    methods = unadvertised_methods(
        revision, {}, initialize_result(revision)["capabilities"], direction="server"
    )
    return [
        {"answers": {}, "steps": [[{"note": f"capability:{m}", "message": _minimal_message(revision, m)}]]}
        for m in methods
    ]


def answered_methods(revision: str) -> list[str]:
    """The client requests a plan's ``answers`` may cover (``initialize`` and ``server/discover``
    are always answered validly)."""
    return [m for m in client_methods(revision, "request") if m not in ("initialize", "server/discover")]


def _minimal_message(revision: str, method: str) -> dict[str, Any]:
    """A server-to-client message of ``method`` with the smallest valid params (id 1 for a request)."""
    spec = _versions.methods_for(revision)[method]
    msg: dict[str, Any] = {"jsonrpc": "2.0", **({"id": 1} if spec.kind == "request" else {})}
    msg["method"] = method
    if spec.params is not None:
        msg["params"] = minimal(spec.params)
    return msg
