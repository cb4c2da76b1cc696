"""The client-side oracles: what a client run shows of the rules a client must keep.

:func:`check_client` judges one :class:`ClientRun` from everything the fuzzing server saw:
answers to our requests (exactly one each, same id, the spec's error codes, results that
decode), no answers to notifications, request ids never reused, every message valid for the
negotiated revision, the Streamable HTTP headers a client MUST send (in 2026-07-28 the ones
that mirror the body), and a process that exits by itself with status 0 within the time
allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from ..transports.http._headers import check_request_headers
from ..types import _versions
from . import oracles as orc
from ._fuzz_server import ServerLog, _dump
from .strategies import CLIENT_META_KEYS, accepts

__all__ = ["ClientRun", "check_client"]


@dataclass
class ClientRun:
    log: ServerLog
    exit_code: int | None
    hung: bool
    output: str
    revision: str = ""
    transport: str = "http"


def check_client(run: ClientRun, run_time: float) -> list[orc.Violation]:
    """Every client-side violation of one run."""
    log = run.log
    out: list[orc.Violation] = []
    if run.hung:
        out.append(orc.Violation("alive", f"the client was still running after {run_time} s", "hang"))
    elif run.exit_code != 0:
        out.append(orc.Violation("alive", f"the client exited with status {run.exit_code}", "exit-status"))
    if log.negotiated is None:
        out.append(
            orc.Violation("alive", "the client never sent initialize", "no-initialize")
            if log.session_id is None and not _versions.is_stateless(run.revision)
            else orc.Violation(
                "alive", f"the client never sent a request naming {run.revision} in its _meta", "no-request"
            )
        )
        return out
    out += _check_answers(log, alive=not run.hung and run.exit_code == 0)
    out += _check_unnamed(log, alive=not run.hung and run.exit_code == 0)
    out += _check_messages(log)
    out += _check_headers(log) if run.transport == "http" else _check_stdio(log)
    return out


def _check_answers(log: ServerLog, alive: bool) -> list[orc.Violation]:
    out = []
    revision = log.negotiated or ""
    for key, sent in log.sent.items():
        got = log.answers.get(key, [])
        if sent.get("lenient"):
            # a member of a batch in a revision without batches: refusing the whole batch is
            # fine, and so is any one answer
            if len(got) > 1:
                out.append(
                    orc.Violation("one-response", f"{len(got)} answers to our request id {key}", "extra")
                )
            continue
        if not got:
            if sent["note"] == "probe" or alive:
                oracle, detail = (
                    ("alive", "no-ping-answer")
                    if sent["note"] == "probe"
                    else ("one-response", "batch-missing" if sent["note"] == "batch" else "missing")
                )
                out.append(
                    orc.Violation(
                        oracle,
                        f"no answer to our {sent['method']!r} request (id {key}"
                        f"{', in a batch' if sent['note'] == 'batch' else ''})",
                        detail,
                    )
                )
            continue
        if len(got) > 1:
            out.append(orc.Violation("one-response", f"{len(got)} answers to our request id {key}", "extra"))
        msg = got[0]
        problem = orc._envelope_problem(msg)
        if problem:
            out.append(orc.Violation("valid-response", f"{problem}: {orc._excerpt(msg)}", "envelope"))
            continue
        if sent["note"].startswith("capability:"):
            note = orc.judge_capability_answer(sent["method"], msg)
            out += [note] if note is not None else []
            continue
        codes = _expected_codes(revision, sent)
        if codes is not None and ("error" not in msg or msg["error"]["code"] not in codes):
            # a result is lenient handling, graded as on the server side (result-instead-of-)
            out.append(
                orc.Violation(
                    "error-codes",
                    f"expected error {sorted(codes)} to our {sent['method']!r} "
                    f"({sent['note']}), got {orc._excerpt(msg)}",
                    f"{'want' if 'error' in msg else 'result-instead-of'}-{min(codes)}",
                )
            )
        elif codes is None and "result" in msg:
            problem = orc._result_problem(revision, sent["method"], msg["result"])
            if problem:
                out.append(
                    orc.Violation(
                        "valid-response",
                        f"the {sent['method']} result does not decode as {revision}: {problem[:300]}",
                        f"result:{sent['method']}",
                    )
                )
    for key, got in log.answers.items():
        if key not in log.sent:
            out.append(
                orc.Violation(
                    "no-response-to-notification",
                    f"a response to an id we never sent: {orc._excerpt(got[0])}",
                    "unknown-id",
                )
            )
    return out


def _check_unnamed(log: ServerLog, alive: bool) -> list[orc.Violation]:
    """The client's answers without a valid id (id null, left out, or an invalid one echoed),
    against what we sent that no valid id names (:attr:`ServerLog.unnamed_sent`), mirroring the
    server side (:func:`~._expect.classify`): a request whose id is no string or integer, and an
    empty batch, call for a -32600 error with id null ("If there was an error in detecting the id
    in the Request object (e.g. Parse error/Invalid Request), it MUST be Null"; 2025-11-25 and
    later may leave the id out); a result instead is lenient input (a SHOULD), another code an
    error-code deviation, and no answer at all breaks "the Server MUST reply".  A batch in a
    revision without batches may be refused with one such error; a junk event may get a parse
    error.  Any other answer without a valid id answers a notification.  A client that crashed or
    hung is judged by that alone for what it did not answer."""
    revision = log.negotiated or ""
    required: list[tuple[str, Any]] = []  # (note, the id we sent, _NO_ID for an empty batch)
    allowed = 0
    for item in log.unnamed_sent:
        note, message = item["note"], item["message"]
        if note == "junk-event":
            allowed += 1
        elif message == []:
            required.append((note, _NO_ID))
        elif isinstance(message, list):
            bad = [
                (note, m["id"])
                for m in message
                if isinstance(m, dict) and "id" in m and not orc._valid_id(m["id"])
            ]
            # taken apart: a member with a valid id answered (a batch ignored whole is judged by
            # its unanswered requests alone: one cause, one finding)
            taken_apart = any(
                isinstance(m, dict) and orc._valid_id(m.get("id")) and log.answers.get(orc.idkey(m["id"]))
                for m in message
            )
            if _versions.supports_batching(revision):
                required += bad if taken_apart else []
                allowed += 0 if taken_apart else len(bad)
            else:
                # refused whole with one error, or taken apart (each member with a bad id refused)
                allowed += len(bad) + (0 if taken_apart else 1)
        else:
            required.append((note, message.get("id")))
    pool = [
        m
        for m, _ in log.client_messages
        if isinstance(m, dict) and "method" not in m and not orc._valid_id(m.get("id"))
    ]
    out: list[orc.Violation] = []
    for note, rid in required:
        echoes = [m for m in pool if m.get("id") is None or (rid is not _NO_ID and m.get("id") == rid)]
        match = next((m for m in echoes if _error_code(m) == orc.INVALID_REQUEST), None)
        match = match or next((m for m in echoes if "error" in m), None) or next(iter(echoes), None)
        what = "an empty batch" if rid is _NO_ID else f"our ping with id {orc._excerpt(rid)} ({note})"
        if match is None:
            if alive:
                detail = f"missing-{orc.INVALID_REQUEST}"
                out.append(orc.Violation("error-codes", f"no error -32600 (with id null) for {what}", detail))
            continue
        pool.remove(match)
        if "error" not in match:
            detail = f"result-instead-of-{orc.INVALID_REQUEST}"
            out.append(orc.Violation("error-codes", f"a result for {what}: {orc._excerpt(match)}", detail))
        elif _error_code(match) != orc.INVALID_REQUEST:
            detail = f"want-{orc.INVALID_REQUEST}"
            out.append(
                orc.Violation(
                    "error-codes", f"expected error -32600 for {what}, got {orc._excerpt(match)}", detail
                )
            )
        elif match.get("id") is not None and isinstance(match["id"], bool | dict | list):
            # (1.5 is an id JSON-RPC reads, if one MCP forbids: echoing it is no breach)
            out.append(
                orc.Violation(
                    "error-codes", f"an error for {what} that echoes its id: {orc._excerpt(match)}", "null-id"
                )
            )
        elif "id" not in match and not orc.id_may_be_absent(revision):
            out.append(
                orc.Violation(
                    "error-codes",
                    f"an error for {what} without an id (JSON-RPC wants id null): {orc._excerpt(match)}",
                    "null-id",
                )
            )
    if len(pool) > allowed:
        out.append(
            orc.Violation(
                "no-response-to-notification",
                f"{len(pool) - allowed} response(s) without a valid id that answer nothing we sent: "
                f"{orc._excerpt(pool[0])}",
                "null-id",
            )
        )
    return out


_NO_ID = object()  # (an empty batch has no id to echo)


def _error_code(msg: dict[str, Any]) -> Any:
    error = msg.get("error")
    return error.get("code") if isinstance(error, dict) else None


def _expected_codes(revision: str, sent: dict[str, Any]) -> set[int] | None:
    """The error codes an answer must carry (None: a result or any error will do)."""
    spec = _versions.methods_for(revision).get(sent["method"])
    if sent["note"] == "unknown_method" or spec is None or spec.direction == "client":
        return {orc.METHOD_NOT_FOUND}
    if sent["note"].startswith("params:"):
        try:
            msgspec.json.decode(_dump(sent["message"]), type=spec.message)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return orc.rejected_params_codes(spec, sent["message"].get("params"))
    return None


def _check_messages(log: ServerLog) -> list[orc.Violation]:
    out = []
    seen: set[str] = set()
    revision = log.negotiated or ""
    for msg, after_init in log.client_messages:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            out.append(
                orc.Violation("valid-message", f"not a JSON-RPC 2.0 message: {orc._excerpt(msg)}", "envelope")
            )
            continue
        if "method" not in msg:
            continue  # responses: judged with the requests they answer
        if "id" in msg:
            if not orc._valid_id(msg["id"]):
                out.append(
                    orc.Violation(
                        "client-ids",
                        f"a request id that is not a string or an integer: {orc._excerpt(msg)}",
                        "bad-id",
                    )
                )
            elif after_init and orc.idkey(msg["id"]) in seen and not _versions.is_stateless(revision):
                # (the rule is per session; 2026-07-28 has none)
                out.append(
                    orc.Violation(
                        "client-ids", f"request id {msg['id']!r} used twice in the session", "reused"
                    )
                )
            if after_init:
                seen.add(orc.idkey(msg["id"]))
        if after_init and not accepts(revision, msg):
            out.append(
                orc.Violation(
                    "valid-message",
                    f"not a valid {revision} client message: {orc._excerpt(msg)}",
                    f"message:{msg.get('method')}",
                )
            )
    return out


def _check_headers(log: ServerLog) -> list[orc.Violation]:
    if log.negotiated is not None and _versions.is_stateless(log.negotiated):
        return _check_stateless_headers(log)
    out: list[orc.Violation] = []
    if any(post.get("refused_batch") for post in log.posts if post["after_init"]) and not (
        log.negotiated and _versions.supports_batching(log.negotiated)
    ):
        out.append(
            orc.Violation(
                "valid-message",
                f"a JSON-RPC batch in {log.negotiated}, which has none "
                '("The body of the POST request MUST be a single JSON-RPC request, '
                'notification, or response")',
                "batch",
            )
        )
    needs_version = log.negotiated is not None and log.negotiated >= "2025-06-18"
    for post in log.posts:
        headers = dict(post["headers"])
        if post["method"] == "POST":
            accept = headers.get("accept", "")
            if "application/json" not in accept or "text/event-stream" not in accept:
                out.append(orc.Violation("client-http", f"a POST with Accept {accept!r}", "accept"))
        if not post["after_init"]:
            continue
        if headers.get("mcp-session-id") != log.session_id:
            out.append(
                orc.Violation(
                    "client-http",
                    f"a {post['method']} after initialize with Mcp-Session-Id "
                    f"{headers.get('mcp-session-id')!r}",
                    "session-id",
                )
            )
        if needs_version and headers.get("mcp-protocol-version") != log.negotiated:
            out.append(
                orc.Violation(
                    "client-http",
                    f"a {post['method']} after initialize with "
                    f"MCP-Protocol-Version {headers.get('mcp-protocol-version')!r}",
                    "protocol-version",
                )
            )
    return out


def _check_stdio(log: ServerLog) -> list[orc.Violation]:
    """What the HTTP checks judge from the POSTs, for a client on stdio: no JSON-RPC batch in a
    revision without batches, no response from a 2026-07-28 client (it has no server requests)."""
    revision = log.negotiated or ""
    out = []
    if any(e.get("dir") == "refused-batch" for e in log.events) and not _versions.supports_batching(revision):
        out.append(orc.Violation("valid-message", f"a JSON-RPC batch in {revision}, which has none", "batch"))
    if _versions.is_stateless(revision):
        out += [
            orc.Violation(
                "valid-message",
                f"a response from a 2026-07-28 client, which gets no requests: {orc._excerpt(msg)}",
                "response",
            )
            for msg, _ in log.client_messages
            if isinstance(msg, dict) and "method" not in msg
        ]
    return out


def _check_stateless_headers(log: ServerLog) -> list[orc.Violation]:
    """2026-07-28: every POST carries ``Accept`` and ``MCP-Protocol-Version``; every request the
    ``Mcp-Method`` (and ``Mcp-Name``) headers that mirror its body, and its version matches the
    ``_meta`` one (:func:`~mcp_trio.transports.http._headers.check_request_headers`); the body is
    a single request or notification, never a response or a batch."""
    out: list[orc.Violation] = []
    version = log.negotiated or ""
    for post in log.posts:
        if post["method"] != "POST":
            continue
        headers = dict(post["headers"])
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            out.append(orc.Violation("client-http", f"a POST with Accept {accept!r}", "accept"))
        msg = post.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            kind = (
                "a batch"
                if isinstance(msg, list)
                else "a response"
                if isinstance(msg, dict)
                else "no message"
            )
            out.append(
                orc.Violation(
                    "valid-message",
                    f'a POST body that is {kind} in {version} ("The body of the '
                    'HTTP POST MUST be a single JSON-RPC request or notification")',
                    "body",
                )
            )
            continue
        if "id" not in msg:
            if headers.get("mcp-protocol-version") != version:
                out.append(
                    orc.Violation(
                        "client-http",
                        f"a {msg['method']} notification with MCP-Protocol-Version "
                        f"{headers.get('mcp-protocol-version')!r}",
                        "protocol-version",
                    )
                )
            continue
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        body_version = meta.get(CLIENT_META_KEYS[0])
        problem = check_request_headers(headers, msg["method"], params, body_version or version)
        if problem:
            out.append(orc.Violation("client-http", f"{msg['method']}: {problem}", "headers"))
        if body_version != version or not isinstance(meta.get(CLIENT_META_KEYS[1]), dict):
            out.append(
                orc.Violation(
                    "valid-message",
                    f"a {msg['method']} request whose _meta does not name "
                    f"{version} and the client's capabilities: {orc._excerpt(meta)}",
                    "meta",
                )
            )
    return out
