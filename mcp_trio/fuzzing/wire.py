"""The fuzzer's oracles on live traffic: each message between a client and a server checked as it
passes, against the revision the two negotiated (what ``--validate`` on a proxy runs).

:class:`WireCheck` is sans-IO: it is told each message and who sent it (:meth:`WireCheck.check`)
and answers with the rules the message breaks, as the fuzzer's findings name them
(:class:`~mcp_trio.fuzzing.oracles.Violation`: the rule, its grade, the sentence it cites).  It
never changes a message; what to do about a finding is the caller's :class:`Policy`.

Rules it checks (the rule ids of :data:`~mcp_trio.fuzzing.RULES`):

* ``valid-message``: a JSON-RPC 2.0 object (``"jsonrpc": "2.0"``); a method of the revision
  sent by the side that may send it, decoding as its type in the revision's schema, with an id
  exactly when it is a request.  A method the revision does not define is not judged (custom
  methods are allowed: the receiver answers -32601).
* ``request-id``: a request's id is a string or an integer, and not the id of a request of the
  same sender still unanswered.
* ``response-envelope``: a response carries exactly one of ``result`` and ``error``, an id, an
  error with an integer code and a string message.
* ``result-schema``: a result decodes as one of the result types of the method it answers.
* ``unasked-response`` and ``one-reply``: a response answers a request of the other side that
  is still unanswered (once answered, a second answer is ``one-reply``).
* ``capabilities`` (a note): a request the receiver did not advertise the capability for, or a
  notification its sender did not declare (``notifications/tools/list_changed`` without
  ``tools.listChanged``).

Bounded: at most ``max_pending`` requests unanswered per direction and ``max_answered`` ids of
answered ones are remembered (the oldest forgotten first).
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ..types import _versions
from ._expect import _valid_id, idkey
from .oracles import RULES, Violation, _envelope_problem, _excerpt, _result_problem
from .strategies import advertised, gate

__all__ = ["ACTIONS", "Action", "Policy", "Sender", "Validator", "Verdict", "WireCheck"]

log = logging.getLogger("mcp_trio.validate")

#: Who sent a message.
Sender = Literal["client", "server"]
#: What a :class:`Policy` does about a finding: ``log`` it (a warning, and counted), ``count``
#: it only, or ``block`` the message (logged and counted; the caller answers or drops it).
Action = Literal["log", "count", "block"]
ACTIONS: tuple[Action, ...] = ("log", "count", "block")
_OTHER: dict[Sender, Sender] = {"client": "server", "server": "client"}


@dataclass(frozen=True)
class Policy:
    """What to do about each rule broken: ``rules`` maps a rule id (``result-schema``) or a grade
    (``violation``, ``deviation``, ``note``) to an action; a rule's own entry wins over its
    grade's, and ``default`` over nothing."""

    default: Action = "log"
    rules: Mapping[str, Action] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, action in {"default": self.default, **self.rules}.items():
            if action not in ACTIONS:
                raise ValueError(f"validation action {action!r} for {key!r}: use one of {', '.join(ACTIONS)}")

    def action(self, finding: Violation) -> Action:
        return self.rules.get(finding.rule) or self.rules.get(finding.severity) or self.default

    @classmethod
    def parse(cls, text: str) -> Policy:
        """``"log"``, or ``"count,result-schema=block,note=count"``: an action for every rule
        first (optional), then ``RULE_OR_GRADE=ACTION`` pairs.

        Raises:
            ValueError: an action or a rule that does not exist, naming it.
        """
        default: str = "log"
        rules: dict[str, Action] = {}
        for part in (p.strip() for p in text.split(",") if p.strip()):
            key, sep, value = part.partition("=")
            if not sep:
                default = key
                continue
            key, value = key.strip(), value.strip()
            if key not in RULES and key not in ("violation", "deviation", "note"):
                raise ValueError(
                    f"no rule {key!r} to validate: use a grade (violation, deviation, note) or one of "
                    f"{', '.join(sorted(set(RULES)))}"
                )
            if value not in ACTIONS:
                raise ValueError(f"validation action {value!r} for {key!r}: use one of {', '.join(ACTIONS)}")
            rules[key] = value  # (checked just above)
        if default not in ACTIONS:
            raise ValueError(f"validation action {default!r}: use one of {', '.join(ACTIONS)}")
        return cls(default, rules)  # (checked just above)


class WireCheck:
    """The rules each message between one client and one server breaks (see the module doc)."""

    def __init__(
        self,
        revision: str | None = None,
        *,
        client_capabilities: Mapping[str, Any] | None = None,
        server_capabilities: Mapping[str, Any] | None = None,
        max_pending: int = 10_000,
        max_answered: int = 10_000,
    ) -> None:
        self.revision = revision
        self.capabilities: dict[Sender, dict[str, Any]] = {
            "client": dict(client_capabilities or {}),
            "server": dict(server_capabilities or {}),
        }
        self._methods = _versions.methods_for(revision) if revision is not None else {}
        self._pending: dict[Sender, OrderedDict[str, str]] = {
            "client": OrderedDict(),
            "server": OrderedDict(),
        }
        self._answered: dict[Sender, OrderedDict[str, None]] = {
            "client": OrderedDict(),
            "server": OrderedDict(),
        }
        self._max_pending = max_pending
        self._max_answered = max_answered

    def learn(self, revision: str) -> None:
        """Check by ``revision`` from now on (a revision this package has types for)."""
        if revision != self.revision and revision in _versions.SUPPORTED_VERSIONS:
            self.revision = revision
            self._methods = _versions.methods_for(revision)

    def check(self, sender: Sender, message: Any, *, raw: bytes | None = None) -> list[Violation]:
        """The rules ``message`` (a decoded JSON value), sent by ``sender``, breaks.  Until the
        revision is known (given, or learned from the ``initialize`` answer or a 2026-07-28
        request's ``_meta``), only what every revision shares is checked.  ``raw``: the bytes
        ``message`` was decoded from, read again for its type instead of ``message`` encoded."""
        if (
            isinstance(message, list)
            and message
            and self.revision is not None
            and _versions.supports_batching(self.revision)
        ):
            return [found for member in message for found in self.check(sender, member)]
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return [_bad("valid-message", f"not a JSON-RPC 2.0 message: {_excerpt(message)}", "envelope")]
        if "method" in message:
            return self._message(sender, message, raw)
        return self._response(sender, message)

    def _message(self, sender: Sender, message: dict[str, Any], raw: bytes | None = None) -> list[Violation]:
        method = message["method"]
        if not isinstance(method, str):
            return [_bad("valid-message", f"a method that is not a string: {_excerpt(message)}", "envelope")]
        out = self._request_id(sender, message) if "id" in message else []
        if "id" in message and not _valid_id(message["id"]):
            return out  # (one cause, one finding: the type would refuse the id too)
        self._learn_from(sender, method, message.get("params"))
        spec = self._methods.get(method)
        if spec is None:
            return out  # (a custom method: the receiver answers it, or -32601)
        detail = f"message:{method}"
        spec_revision = self.revision or ""  # (set: a spec came from its methods)
        if spec.direction not in (sender, "both"):
            by = "the client" if spec.direction == "client" else "the server"
            return [*out, _bad("valid-message", f"{method} is sent by {by} in {self.revision}", detail)]
        if spec.input_request:
            where = "inside an InputRequiredResult"
            return [*out, _bad("valid-message", f"{method} travels {where} in {self.revision}", detail)]
        if ("id" in message) != (spec.kind == "request"):
            what = "a request without an id" if spec.kind == "request" else "a notification with an id"
            out.append(_bad("valid-message", f"{method} sent as {what}", detail))
        else:
            try:
                data = raw if raw is not None else msgspec.json.encode(message)
                _versions.decoder_for(spec.message).decode(data)
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                out.append(_bad("valid-message", f"not a valid {self.revision} {method}: {exc}", detail))
        path = gate(spec_revision, method)
        if path is not None:
            # (a request needs the receiver's capability; a notification, the sender's)
            whose = _OTHER[sender] if spec.kind == "request" else sender
            if not advertised(self.capabilities[whose], path):
                granted = ".".join(path)
                out.append(
                    _bad("capabilities", f"{method} sent, but the {whose} did not advertise {granted}")
                )
        return out

    def _request_id(self, sender: Sender, message: dict[str, Any]) -> list[Violation]:
        rid = message["id"]
        if not _valid_id(rid):
            return [_bad("client-ids", f"a request id that is not a string or an integer: {_excerpt(rid)}")]
        key = idkey(rid)
        pending = self._pending[sender]
        if key in pending:
            return [_bad("client-ids", f"request id {rid!r} is the id of a request not answered yet")]
        pending[key] = message["method"]
        if len(pending) > self._max_pending:
            pending.popitem(last=False)
        self._answered[sender].pop(key, None)
        return []

    def _response(self, sender: Sender, message: dict[str, Any]) -> list[Violation]:
        problem = _envelope_problem(message, self.revision)
        if problem is not None:
            return [_bad("valid-response", f"{problem}: {_excerpt(message)}")]
        if message.get("id") is None:
            return []  # (an error for input whose id could not be read)
        requester = _OTHER[sender]
        key = idkey(message["id"])
        method = self._pending[requester].pop(key, None)
        answered = self._answered[requester]
        if method is None:
            if key in answered:
                second = f"a second answer to request {message['id']!r} of the {requester}"
                return [_bad("one-response", second, "extra")]
            unasked = f"an answer to {message['id']!r}, which no request of the {requester} has"
            return [_bad("no-response-to-notification", unasked, "unknown-id")]
        answered[key] = None
        if len(answered) > self._max_answered:
            answered.popitem(last=False)
        result = message.get("result")
        if method in ("initialize", "server/discover") and isinstance(result, dict):
            self._learn_from_answer(method, result)
        if "result" in message and self.revision is not None:
            problem = _result_problem(self.revision, method, message["result"])
            if problem is not None:
                return [_bad("valid-response", f"not a valid {method} result: {problem}", f"result:{method}")]
        return []

    def _learn_from(self, sender: Sender, method: str, params: Any) -> None:
        """What a request or notification says of the negotiation: ``initialize``'s client
        capabilities; a 2026-07-28 request's revision and capabilities in its ``_meta``."""
        if not isinstance(params, dict):
            return
        if method == "initialize" and sender == "client":
            caps = params.get("capabilities")
            self.capabilities["client"] = dict(caps) if isinstance(caps, dict) else {}
            return
        meta = params.get("_meta")
        if sender == "client" and isinstance(meta, dict):
            version = meta.get(_VERSION_META)
            if isinstance(version, str):
                self.learn(version)
            caps = meta.get(_CAPABILITIES_META)
            if isinstance(caps, dict):
                self.capabilities["client"] = dict(caps)

    def _learn_from_answer(self, method: str, result: dict[str, Any]) -> None:
        caps = result.get("capabilities")
        if isinstance(caps, dict):
            self.capabilities["server"] = dict(caps)
        version = result.get("protocolVersion")
        if method == "initialize" and isinstance(version, str):
            self.learn(version)


_VERSION_META = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"


def _bad(oracle: str, message: str, detail: str = "") -> Violation:
    return Violation(oracle, message, detail)


@dataclass(frozen=True)
class Verdict:
    """What a :class:`Validator` found in one message and whether it blocks it."""

    findings: list[Violation]
    blocked: bool

    def reason(self, revision: str | None) -> str:
        """The findings that block, for the error that answers instead (one line)."""
        return "; ".join(describe(f, revision) for f in self.findings)


class Validator:
    """A :class:`WireCheck` and a :class:`Policy`: each message checked, its findings logged
    (``mcp_trio.validate``) and counted as the policy says, and the verdict on whether it
    passes."""

    def __init__(
        self, check: WireCheck, policy: Policy, *, counts: Counter[tuple[str, Sender]] | None = None
    ) -> None:
        self.wire = check
        self.policy = policy
        #: Findings so far, by (rule, sender) (``counts``: shared with other validators).
        self.counts: Counter[tuple[str, Sender]] = Counter() if counts is None else counts

    def judge(
        self, sender: Sender, message: Any, *, may_block: bool = True, raw: bytes | None = None
    ) -> Verdict:
        """``message`` checked, its findings logged and counted; whether it is to be blocked
        (never when ``may_block`` is false: a message of our own, say); ``raw`` as for
        :meth:`WireCheck.check`."""
        findings = self.wire.check(sender, message, raw=raw)
        blocked = False
        for finding in findings:
            self.counts[(finding.rule, sender)] += 1
            action = self.policy.action(finding)
            if action == "block" and not may_block:
                action = "log"
            if action != "count":
                level = logging.WARNING if finding.severity != "note" else logging.INFO
                log.log(
                    level,
                    "%s %s: %s",
                    "blocked, the" if action == "block" else "the",
                    sender,
                    describe(finding, self.wire.revision),
                )
            blocked |= action == "block"
        return Verdict(findings, blocked)

    def report(self) -> dict[str, Any]:
        """The findings counted so far: ``{"revision", "findings": [{rule, grade, sender, count}]}``."""
        return {"revision": self.wire.revision, "findings": count_rows(self.counts)}


def count_rows(counts: Counter[tuple[str, Sender]]) -> list[dict[str, Any]]:
    """``counts`` as rows: ``{rule, grade, sender, count}``, by rule then sender."""
    return [
        {"rule": rule, "grade": RULES[rule].grade, "sender": sender, "count": count}
        for (rule, sender), count in sorted(counts.items())
    ]


def describe(finding: Violation, revision: str | None) -> str:
    """One line: the grade, the rule, what was wrong, and the sentence it breaks, where."""
    cite = finding.to_json(revision)["cites"]
    return f"{finding.severity} of {finding.rule}: {finding.message} ({cite['document']}: {cite['text']!r})"
