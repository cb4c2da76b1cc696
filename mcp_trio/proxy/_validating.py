"""``proxy(target, validate=...)``: every message between the proxy and the server it proxies
checked, as it passes, by the fuzzer's oracles (:mod:`mcp_trio.fuzzing.wire`, one source of
truth for the rules), and per rule logged, counted or blocked.

Rules it keeps:

* Each upstream connection gets a :class:`~mcp_trio.fuzzing.wire.WireCheck` of its own (a new
  session learns its revision and capabilities again); the counts add up across reconnections.
* What the upstream sends is judged as the server's, and may be blocked; what the proxy sends
  it is judged as the client's (the proxy's clients' requests, forwarded), and never blocked
  (a proxy's client's invalid request never gets this far: the proxy's own session refuses it
  with the specification's error).
* The counts are served with the proxy's metrics as ``mcp_validation_findings_total``, labelled
  with the rule, its grade and the sender.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import trio

from ..fuzzing._expect import _valid_id
from ..fuzzing.wire import Policy, Sender, Validator, Verdict, WireCheck, count_rows
from ..transports._base import ChannelTraits, Frame, MessageChannel

__all__ = ["ValidatingChannel", "Validation", "ValidationMetrics"]

_OTHER: dict[Sender, Sender] = {"client": "server", "server": "client"}


class Validation:
    """A proxy's validation: its policy, the findings counted over every upstream connection,
    and a :class:`ValidatingChannel` for each new one."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        #: Findings so far, by (rule, sender), over every upstream connection.
        self.counts: Counter[tuple[str, Sender]] = Counter()

    def channel(self, inner: MessageChannel) -> MessageChannel:
        """``inner`` (a new upstream connection's channel), checked from its first message."""
        validator = Validator(WireCheck(), self.policy, counts=self.counts)
        return ValidatingChannel(inner, validator, peer="server")


class ValidationMetrics:
    """The findings of a proxy's validations (a gateway's: one per backend, labelled with its
    prefix as ``backend``; with a store, this worker's id as ``worker``), as the metric
    ``mcp_validation_findings_total`` (a :class:`~mcp_trio.server.MetricSource`)."""

    def __init__(
        self, validations: Mapping[str | None, Validation], worker: Callable[[], str | None] = lambda: None
    ) -> None:
        self._validations = dict(validations)
        self._worker = worker  # (the id of this worker, with a store: a label of its own)

    def prometheus_lines(self) -> list[str]:
        name = "mcp_validation_findings_total"
        lines = [
            f"# HELP {name} Rules broken by messages between a proxy and the server it proxies.",
            f"# TYPE {name} counter",
        ]
        worker = self._worker()
        for backend, validation in self._validations.items():
            where = "" if backend is None else f',backend="{backend}"'
            where += "" if worker is None else f',worker="{worker}"'
            for row in count_rows(validation.counts):
                labels = f'rule="{row["rule"]}",grade="{row["grade"]}",sender="{row["sender"]}"{where}'
                lines.append(f"{name}{{{labels}}} {row['count']}")
        return lines


class ValidatingChannel(trio.abc.Channel[Frame], ChannelTraits):
    """``inner`` with every frame that passes judged by ``validator``: what it receives as sent
    by ``peer``, what is sent on it as ours (never blocked).  Give it to a client with
    ``open_client(..., wrap_channel=...)`` (``peer="server"``).

    A blocked message does not reach the session: a response is replaced by a -32603 error for
    the same request naming the rules it broke (so nothing waits for it), a request of the
    peer is refused with -32600 (-32601 for a capability not advertised) and never seen, a
    notification is dropped.  A blocked batch (2025-03-26) is blocked whole.  It declares
    only :class:`~mcp_trio.transports.ChannelTraits` (forwarded from ``inner``): a stdio
    channel's faster paths are not used while validating.
    """

    def __init__(self, inner: MessageChannel, validator: Validator, *, peer: Sender = "server") -> None:
        self._inner = inner
        self.validator = validator
        self._peer: Sender = peer
        self._send_lock = trio.Lock()  # (the session's writer and our refusals)

    @property
    def url(self) -> str | None:  # type: ignore[override]
        return self._inner.url if isinstance(self._inner, ChannelTraits) else None

    @property
    def session_id(self) -> str | None:  # type: ignore[override]
        return self._inner.session_id if isinstance(self._inner, ChannelTraits) else None

    @property
    def end_reason(self) -> str | None:  # type: ignore[override]
        return self._inner.end_reason if isinstance(self._inner, ChannelTraits) else None

    @property
    def output_outlives_input(self) -> bool:  # type: ignore[override]
        return isinstance(self._inner, ChannelTraits) and self._inner.output_outlives_input

    async def receive(self) -> Frame:
        while True:
            frame = await self._inner.receive()
            if frame.error is not None or frame.control is not None:
                return frame
            try:
                message: Any = msgspec.json.decode(frame.data)
            except msgspec.DecodeError:
                message = frame.data  # (judged as what it is: not a JSON-RPC message)
            verdict = self.validator.judge(self._peer, message, raw=frame.data)
            if not verdict.blocked:
                return frame
            instead = await self._block(message, verdict)
            if instead is not None:
                return instead

    async def _block(self, message: Any, verdict: Verdict) -> Frame | None:
        """What the session gets instead of a blocked message (None: nothing)."""
        reason = verdict.reason(self.validator.wire.revision)
        members = message if isinstance(message, list) else [message]
        answers: list[dict[str, Any]] = []
        for member in members:
            if not isinstance(member, dict) or not _valid_id(member.get("id")):
                continue  # (a notification, or unreadable: dropped)
            if "method" not in member:  # (a response to us: an error for our request instead)
                text = f"the {self._peer}'s answer was blocked by validation: {reason}"
                answers.append(
                    {"jsonrpc": "2.0", "id": member["id"], "error": {"code": -32603, "message": text}}
                )
                continue
            code = -32601 if any(f.rule == "capabilities" for f in verdict.findings) else -32600
            refusal = {
                "jsonrpc": "2.0",
                "id": member["id"],
                "error": {"code": code, "message": f"blocked: {reason}"},
            }
            async with self._send_lock:
                await self._inner.send(Frame(msgspec.json.encode(refusal)))
        if not answers:
            return None
        return Frame(msgspec.json.encode(answers if isinstance(message, list) else answers[0]))

    async def send(self, value: Frame) -> None:
        if value.error is None and value.control is None:
            try:
                self.validator.judge(
                    _OTHER[self._peer], msgspec.json.decode(value.data), may_block=False, raw=value.data
                )
            except msgspec.DecodeError:
                pass
        async with self._send_lock:
            await self._inner.send(value)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _error(id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}
