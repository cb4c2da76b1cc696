"""The oracles (:data:`ORACLES`) and the rules they grade by (:data:`RULES`): each rule the one
sentence it enforces, where that sentence is, and its level, which sets the grade of a breach.

A ``MUST`` (or ``MUST NOT``) broken is a *violation* and fails a run; a ``SHOULD`` (or the
meaning JSON-RPC gives an error code, which carries no keyword) is a *deviation*, reported and
failing a run only with ``--strict``; a *judgement* rule, where the text does not settle what
the peer must do, gives a *note*.  :func:`rule_for` maps an oracle's finding (its oracle and
detail) to its rule; :meth:`Rule.cite` names the sentence for one revision: the MCP documents
live under ``docs/specification/<revision>/`` of the specification repository, and where the
revisions word a rule differently the rule carries each wording.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["GRADES", "ORACLES", "RULES", "Oracle", "Rule", "grade_of", "rule_for"]

#: The grade of a breach by the level of the rule broken.
GRADES = {"MUST": "violation", "SHOULD": "deviation", "judgement": "note"}

JSONRPC = "JSON-RPC 2.0 (https://www.jsonrpc.org/specification)"


@dataclass(frozen=True)
class Rule:
    """One sentence of the specification an oracle enforces.

    ``document`` is a path under ``docs/specification/<revision>/`` (or :data:`JSONRPC` plus a
    section); ``variants`` maps revisions to a (document, text) wording of their own."""

    id: str
    level: str  # "MUST" | "SHOULD" | "judgement"
    document: str
    text: str
    variants: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def grade(self) -> str:
        return GRADES[self.level]

    def cite(self, revision: str | None = None) -> dict[str, Any]:
        """The rule as a finding quotes it: level, document (with the revision) and sentence."""
        document, text = self.variants.get(revision or "", (self.document, self.text))
        if revision and not document.startswith(("JSON-RPC", "docs/specification/")):
            document = f"docs/specification/{revision}/{document}"
        return {"rule": self.id, "level": self.level, "document": document, "text": text}


def _per_revision(revisions: tuple[str, ...], document: str, text: str) -> dict[str, tuple[str, str]]:
    return dict.fromkeys(revisions, (document, text))


def _of(revision: str, document: str) -> str:
    """A document of another revision, cited where the revision at hand has no such sentence."""
    return f"docs/specification/{revision}/{document}"


_TRANSPORTS = "basic/transports.mdx"
_HTTP_2026 = "basic/transports/streamable-http.mdx"
_REQUESTS_REPLY = (
    "When a rpc call is made, the Server MUST reply with a Response, except for in the case of Notifications."
)
_NO_HTTP_2024 = "[2024-11-05 has no Streamable HTTP: the sentence of 2025-03-26, which brought it.]"
_NO_SESSIONS_2026 = (
    "A server that supports only this revision and receives such traffic from an older client SHOULD "
    "respond as follows: [...] An Mcp-Session-Id header on a request: ignore it, and do not mint or "
    "echo session IDs. [2026-07-28 has no sessions.]"
)
_NOT_RESUMABLE_2026 = (
    "A server that supports only this revision and receives such traffic from an older client SHOULD "
    "respond as follows: [...] A Last-Event-ID header: ignore it; streams are not resumable."
)


def _http_2024(text: str) -> dict[str, tuple[str, str]]:
    """The 2025-03-26 wording of a Streamable HTTP rule, cited for a 2024-11-05 session over it."""
    return {"2024-11-05": (_of("2025-03-26", _TRANSPORTS), f"{text} {_NO_HTTP_2024}")}


def _by_id(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


_ENDED_SESSION = (
    "The server MAY terminate the session at any time, after which it MUST respond to requests "
    "containing that session ID with HTTP 404 Not Found."
)
_PROTOCOL_VERSION_HEADER = (
    "If the server receives a request with an invalid or unsupported MCP-Protocol-Version, it MUST "
    "respond with 400 Bad Request."
)

RULES: dict[str, Rule] = _by_id(
    Rule(
        "ping",
        "MUST",
        "basic/utilities/ping.mdx",
        "The receiver MUST respond promptly with an empty response",
        # 2026-07-28 has no ping: the probe is server/discover, a request like any other
        variants={"2026-07-28": (f"{JSONRPC}, section 5", _REQUESTS_REPLY)},
    ),
    Rule("reply", "MUST", f"{JSONRPC}, section 5", _REQUESTS_REPLY),
    Rule(
        "one-reply",
        "MUST",
        f"{JSONRPC}, section 5",
        "When a rpc call is made, the Server MUST reply with a Response [one Response object per "
        "call; a second one answers nothing]",
    ),
    Rule(
        "reused-id-reply",
        "SHOULD",
        _TRANSPORTS,
        "The SSE stream SHOULD eventually include a JSON-RPC response for the JSON-RPC request sent "
        "in the POST body. [The request reused an id: 'The request ID MUST NOT have been previously "
        "used by the requestor within the same session' binds the requester first.]",
        variants={
            **_http_2024(
                "The SSE stream SHOULD eventually include one JSON-RPC response per each JSON-RPC "
                "request sent in the POST body. [The request reused an id.]"
            ),
            "2025-03-26": (
                _TRANSPORTS,
                "The SSE stream SHOULD eventually include one JSON-RPC response per each JSON-RPC "
                "request sent in the POST body. [The request reused an id.]",
            ),
            "2025-06-18": (
                _TRANSPORTS,
                "The SSE stream SHOULD eventually include JSON-RPC response for the JSON-RPC request "
                "sent in the POST body. [The request reused an id.]",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "The final JSON-RPC response SHOULD terminate the stream. [The request reused the id "
                "of a request still in progress.]",
            ),
        },
    ),
    Rule(
        "reused-id",
        "judgement",
        "basic/index.mdx",
        "The request ID MUST NOT have been previously used by the requestor within the same session. "
        "[The requester broke this first; how the receiver answers the second use is not specified.]",
        variants={
            "2024-11-05": (
                "basic/messages.mdx",
                "The request ID MUST NOT have been previously used by the requestor within the same "
                "session. [The requester broke this first; how the receiver answers the second use is "
                "not specified.]",
            ),
            "2026-07-28": (
                "basic/index.mdx",
                "The request ID MUST NOT match the ID of any other request the sender has issued and "
                "not yet received a response for. [The requester broke this first; how the receiver "
                "answers the second use is not specified.]",
            ),
        },
    ),
    Rule(
        "no-reply-to-notification",
        "MUST",
        "basic/index.mdx",
        "The receiver MUST NOT send a response.",
        variants=_per_revision(
            ("2024-11-05",),
            f"{JSONRPC}, section 4.1",
            "The Server MUST NOT reply to a Notification, including those that are within a batch request.",
        ),
    ),
    Rule(
        "unasked-response",
        "MUST",
        "basic/index.mdx",
        "Responses MUST include the same ID as the request they correspond to. [An answer with an id "
        "no request of the case has answers nothing.]",
        variants={
            "2024-11-05": (
                "basic/messages.mdx",
                "Responses MUST include the same ID as the request they correspond to. [An answer with "
                "an id no request of the case has answers nothing.]",
            ),
            **_per_revision(
                ("2025-11-25", "2026-07-28"),
                "basic/index.mdx",
                "Result responses MUST include the same ID as the request they correspond to. [An "
                "answer with an id no request of the case has answers nothing.]",
            ),
        },
    ),
    Rule(
        "error-required",
        "MUST",
        f"{JSONRPC}, section 5",
        "error: This member is REQUIRED on error. [...] result: This member MUST NOT exist if there "
        "was an error invoking the method.",
    ),
    Rule(
        "error-null-id",
        "MUST",
        f"{JSONRPC}, section 5",
        "id: This member is REQUIRED. [...] If there was an error in detecting the id in the Request "
        "object (e.g. Parse error/Invalid Request), it MUST be Null.",
        variants=_per_revision(
            ("2025-11-25", "2026-07-28"),
            "basic/index.mdx",
            "Error responses MUST include the same ID as the request they correspond to (except in "
            "error cases where the ID could not be read due a malformed request). [The schema types "
            "that id as optional and never null: an error without an id is what the revision asks.]",
        ),
    ),
    Rule(
        "error-code",
        "SHOULD",
        f"{JSONRPC}, section 5.1",
        "-32700 Parse error: Invalid JSON was received by the server. -32600 Invalid Request: The JSON "
        "sent is not a valid Request object. -32601 Method not found: The method does not exist / is "
        "not available. -32602 Invalid params: Invalid method parameter(s). [The table names what each "
        "code means; it has no MUST.]",
    ),
    Rule(
        "lenient-input",
        "SHOULD",
        f"{JSONRPC}, section 5.1",
        "-32600 Invalid Request: The JSON sent is not a valid Request object. -32601 Method not found: "
        "The method does not exist / is not available. -32602 Invalid params: Invalid method "
        "parameter(s). [A result where the table names an error: the input was taken leniently. "
        "'result: This member MUST NOT exist if there was an error invoking the method' holds, since "
        "the method ran; what the code table says is a SHOULD at most, for a server as for a client.]",
    ),
    Rule(
        "utf8",
        "judgement",
        _TRANSPORTS,
        "JSON-RPC messages MUST be UTF-8 encoded. [A rule for the sender; RFC 8259 section 9 lets a "
        "parser accept non-JSON forms, so a lenient reading is not a breach.]",
        variants={
            "2024-11-05": (
                _of("2025-03-26", _TRANSPORTS),
                "JSON-RPC messages MUST be UTF-8 encoded. [2024-11-05 names no encoding: the sentence "
                "of 2025-03-26. A rule for the sender; a lenient reading is not a breach.]",
            ),
            "2026-07-28": (
                "basic/transports/index.mdx",
                "JSON-RPC messages MUST be UTF-8 encoded. [A rule for the sender; RFC 8259 section 9 "
                "lets a parser accept non-JSON forms, so a lenient reading is not a breach.]",
            ),
        },
    ),
    Rule(
        "response-envelope",
        "MUST",
        "basic/index.mdx",
        "Result responses MUST include a result field. [...] Error responses MUST include an error "
        "field with a code and message. Error codes MUST be integers.",
        variants={
            **_per_revision(
                ("2024-11-05",),
                "basic/messages.mdx",
                "Either a result or an error MUST be set. A response MUST NOT set both. Error codes "
                "MUST be integers.",
            ),
            **_per_revision(
                ("2025-03-26", "2025-06-18"),
                "basic/index.mdx",
                "Either a result or an error MUST be set. A response MUST NOT set both. [...] errors "
                "MUST include an error code and message at minimum. Error codes MUST be integers.",
            ),
        },
    ),
    Rule(
        "result-schema",
        "MUST",
        "basic/index.mdx",
        "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification. "
        "[The result decodes as the method's result type in the revision's schema.json.]",
    ),
    Rule(
        "stdout",
        "MUST",
        _TRANSPORTS,
        "The server MUST NOT write anything to its stdout that is not a valid MCP message.",
        variants=_per_revision(
            ("2026-07-28",),
            "basic/transports/stdio.mdx",
            "The server MUST NOT write anything to its stdout that is not a valid MCP message.",
        ),
    ),
    Rule(
        "http-202",
        "MUST",
        _TRANSPORTS,
        "If the input is a JSON-RPC response or notification: If the server accepts the input, the "
        "server MUST return HTTP status code 202 Accepted with no body. If the server cannot accept "
        "the input, it MUST return an HTTP error status code (e.g., 400 Bad Request).",
        variants={
            **_http_2024(
                "If the input consists solely of (any number of) JSON-RPC responses or notifications: "
                "If the server accepts the input, the server MUST return HTTP status code 202 Accepted "
                "with no body."
            ),
            "2025-03-26": (
                _TRANSPORTS,
                "If the input consists solely of (any number of) JSON-RPC responses or notifications: "
                "If the server accepts the input, the server MUST return HTTP status code 202 Accepted "
                "with no body. If the server cannot accept the input, it MUST return an HTTP error "
                "status code (e.g., 400 Bad Request).",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "If the server accepts it, the server MUST return HTTP status code 202 Accepted with no "
                "body. If the server cannot accept it, it MUST return an HTTP error status code",
            ),
        },
    ),
    Rule(
        "http-request-answer",
        "MUST",
        _TRANSPORTS,
        "If the input is a JSON-RPC request, the server MUST either return Content-Type: "
        "text/event-stream, to initiate an SSE stream, or Content-Type: application/json, to return "
        "one JSON object.",
        variants={
            **_http_2024(
                "If the input contains any number of JSON-RPC requests, the server MUST either return "
                "Content-Type: text/event-stream, to initiate an SSE stream, or Content-Type: "
                "application/json, to return one JSON object."
            ),
            "2025-03-26": (
                _TRANSPORTS,
                "If the input contains any number of JSON-RPC requests, the server MUST either return "
                "Content-Type: text/event-stream, to initiate an SSE stream, or Content-Type: "
                "application/json, to return one JSON object.",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "If the body is a JSON-RPC request, the server MUST return either Content-Type: "
                "application/json (a single JSON object) or Content-Type: text/event-stream (an SSE "
                "response stream).",
            ),
        },
    ),
    Rule(
        "http-server-error",
        "judgement",
        _TRANSPORTS,
        "If the server cannot accept the input, it MUST return an HTTP error status code (e.g., 400 "
        "Bad Request). [A 5xx is an error status, so the letter holds; it says the server failed "
        "rather than refused, which is worth knowing.]",
        variants={
            **_http_2024(
                "If the server cannot accept the input, it MUST return an HTTP error status code (e.g., "
                "400 Bad Request). [A 5xx is an error status: the letter holds.]"
            ),
            "2026-07-28": (
                _HTTP_2026,
                "If the server cannot accept it, it MUST return an HTTP error status code (e.g., 400 "
                "Bad Request). [A 5xx is an error status, so the letter holds; it says the server "
                "failed rather than refused, which is worth knowing.]",
            ),
        },
    ),
    Rule(
        "http-get",
        "MUST",
        _TRANSPORTS,
        "The server MUST either return Content-Type: text/event-stream in response to this HTTP GET, "
        "or else return HTTP 405 Method Not Allowed, indicating that the server does not offer an "
        "SSE stream at this endpoint.",
        variants={
            **_http_2024(
                "The server MUST either return Content-Type: text/event-stream in response to this HTTP "
                "GET, or else return HTTP 405 Method Not Allowed, indicating that the server does not "
                "offer an SSE stream at this endpoint."
            ),
            "2026-07-28": (
                _HTTP_2026,
                "A server that supports only this revision and receives such traffic from an older "
                "client SHOULD respond as follows: [...] GET or DELETE to the MCP endpoint: respond "
                "with 405 Method Not Allowed.",
            ),
        },
    ),
    Rule(
        "http-replay",
        "MUST",
        _TRANSPORTS,
        "The server MUST NOT replay messages that would have been delivered on a different stream.",
        variants={
            **_http_2024(
                "The server MUST NOT replay messages that would have been delivered on a different stream."
            ),
            "2026-07-28": (_HTTP_2026, _NOT_RESUMABLE_2026),
        },
    ),
    Rule(
        "http-resume",
        "judgement",
        _TRANSPORTS,
        "The server MAY use this header to replay messages that would have been sent after the last "
        "event ID, on the stream that was disconnected",
        variants={
            **_http_2024(
                "The server MAY use this header to replay messages that would have been sent after the "
                "last event ID, on the stream that was disconnected"
            ),
            "2026-07-28": (_HTTP_2026, _NOT_RESUMABLE_2026),
        },
    ),
    Rule(
        "http-wrong-method",
        "judgement",
        _TRANSPORTS,
        "The server MUST provide a single HTTP endpoint path [...] that supports both POST and GET "
        "methods. [Other methods have no meaning here: a 4xx (ideally 405) is expected.]",
        variants={
            **_http_2024(
                "The server MUST provide a single HTTP endpoint path [...] that supports both POST and "
                "GET methods. [Other methods have no meaning here: a 4xx (ideally 405) is expected.]"
            ),
            "2026-07-28": (
                _HTTP_2026,
                "The server MUST provide a single HTTP endpoint path (hereafter referred to as the MCP "
                "endpoint) that supports POST. [Other methods have no meaning here: a 4xx (ideally "
                "405) is expected.]",
            ),
        },
    ),
    Rule(
        "http-no-session",
        "SHOULD",
        _TRANSPORTS,
        "Servers that require a session ID SHOULD respond to requests without an MCP-Session-Id "
        "header (other than initialization) with HTTP 400 Bad Request.",
        variants={
            **_http_2024(
                "Servers that require a session ID SHOULD respond to requests without an Mcp-Session-Id "
                "header (other than initialization) with HTTP 400 Bad Request."
            ),
            **_per_revision(
                ("2025-03-26", "2025-06-18"),
                _TRANSPORTS,
                "Servers that require a session ID SHOULD respond to requests without an Mcp-Session-Id "
                "header (other than initialization) with HTTP 400 Bad Request.",
            ),
            "2026-07-28": (_HTTP_2026, _NO_SESSIONS_2026),
        },
    ),
    Rule(
        "http-ended-session",
        "MUST",
        _TRANSPORTS,
        _ENDED_SESSION,
        variants={**_http_2024(_ENDED_SESSION), "2026-07-28": (_HTTP_2026, _NO_SESSIONS_2026)},
    ),
    Rule(
        "http-unknown-session",
        "judgement",
        _TRANSPORTS,
        f"{_ENDED_SESSION} [This session id was never issued: the MUST speaks of sessions the server "
        "terminated, and no sentence says how to answer an id it never gave. 404 is what clients act "
        "on (they start a new session); 400 is a reading of its own.]",
        variants={
            **_http_2024(f"{_ENDED_SESSION} [This session id was never issued.]"),
            "2026-07-28": (_HTTP_2026, _NO_SESSIONS_2026),
        },
    ),
    Rule(
        "http-protocol-version",
        "MUST",
        _TRANSPORTS,
        _PROTOCOL_VERSION_HEADER,
        variants={
            **_per_revision(
                ("2024-11-05", "2025-03-26"),
                _of("2025-06-18", _TRANSPORTS),
                f"{_PROTOCOL_VERSION_HEADER} [The header came with 2025-06-18: earlier revisions do not "
                "have it, and the probe does not run in them.]",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "If the server does not implement the requested protocol version (whether the version "
                "is unknown to the server, or is a known version the server has chosen not to "
                "support), it MUST respond with 400 Bad Request",
            ),
        },
    ),
    Rule(
        "http-origin",
        "MUST",
        _TRANSPORTS,
        "If the Origin header is present and invalid, servers MUST respond with HTTP 403 Forbidden.",
        variants={
            **_per_revision(
                ("2024-11-05", "2025-03-26", "2025-06-18"),
                _TRANSPORTS,
                "Servers MUST validate the Origin header on all incoming connections to prevent DNS "
                "rebinding attacks",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "If the Origin header is present and invalid, servers MUST respond with HTTP 403 Forbidden.",
            ),
        },
    ),
    Rule(
        "http-host",
        "judgement",
        _TRANSPORTS,
        "Servers MUST validate the Origin header on all incoming connections [...] When running "
        "locally, servers SHOULD bind only to localhost (127.0.0.1) rather than all network "
        "interfaces (0.0.0.0) [A foreign Host header is how DNS rebinding shows; refusing it is good "
        "practice.]",
        variants=_per_revision(
            ("2026-07-28",),
            _HTTP_2026,
            "Servers MUST validate the Origin header on all incoming connections [...] When running "
            "locally, servers SHOULD bind only to localhost (127.0.0.1) rather than all network "
            "interfaces (0.0.0.0) [A foreign Host header is how DNS rebinding shows; refusing it is "
            "good practice.]",
        ),
    ),
    Rule(
        "version-negotiation",
        "MUST",
        "basic/lifecycle.mdx",
        "If the server supports the requested protocol version, it MUST respond with the same "
        "version. Otherwise, the server MUST respond with another protocol version it supports.",
        variants=_per_revision(
            ("2026-07-28",),
            "basic/versioning.mdx",
            "If the server does not implement the requested version (whether the version is unknown to "
            "the server, or is a known version the server has chosen not to support), it MUST respond "
            "with an UnsupportedProtocolVersionError listing the versions it does support",
        ),
    ),
    Rule(
        "version-error",
        "judgement",
        "basic/lifecycle.mdx",
        "Otherwise, the server MUST respond with another protocol version it supports. [An error "
        "instead of a version is how some servers refuse; the text asks for a version.]",
        variants=_per_revision(
            ("2026-07-28",),
            "basic/versioning.mdx",
            "it MUST respond with an UnsupportedProtocolVersionError listing the versions it does "
            "support [How a server refuses a version it does speak is not specified.]",
        ),
    ),
    Rule(
        "lifecycle",
        "MUST",
        "basic/index.mdx",
        "All implementations MUST support the base protocol and lifecycle management components.",
        variants=_per_revision(
            ("2026-07-28",),
            "basic/index.mdx",
            "All implementations MUST support the base protocol, versioning, and the message patterns.",
        ),
    ),
    Rule(
        "request-id",
        "MUST",
        "basic/index.mdx",
        "Requests MUST include a string or integer ID. Unlike base JSON-RPC, the ID MUST NOT be null. "
        "The request ID MUST NOT have been previously used by the requestor within the same session.",
        variants={
            "2024-11-05": (
                "basic/messages.mdx",
                "Requests MUST include a string or integer ID. Unlike base JSON-RPC, the ID MUST NOT be "
                "null. The request ID MUST NOT have been previously used by the requestor within the "
                "same session.",
            ),
            "2026-07-28": (
                "basic/index.mdx",
                "Requests MUST include a string or integer ID. Unlike base JSON-RPC, the ID MUST NOT be "
                "null. The request ID MUST NOT match the ID of any other request the sender has issued "
                "and not yet received a response for.",
            ),
        },
    ),
    Rule(
        "valid-message",
        "MUST",
        "basic/index.mdx",
        "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification. "
        "[The message decodes as its type in the revision's schema.]",
    ),
    Rule(
        "batch-receive",
        "MUST",
        _of("2025-03-26", "basic/index.mdx"),
        "MCP implementations MAY support sending JSON-RPC batches, but MUST support receiving "
        "JSON-RPC batches. [2025-03-26, the one revision with batches: a request in a batch is "
        "answered like one alone.]",
        variants=_per_revision(
            ("2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"),
            f"{JSONRPC}, section 5",
            f"{_REQUESTS_REPLY} [This revision has no batches: a request in one is still a call.]",
        ),
    ),
    Rule(
        "client-batch",
        "MUST",
        _TRANSPORTS,
        "The body of the POST request MUST be a single JSON-RPC request, notification, or response. "
        "[A revision without batching.]",
        variants={
            **_per_revision(
                ("2024-11-05", "2025-03-26"),
                _of("2025-06-18", _TRANSPORTS),
                "The body of the POST request MUST be a single JSON-RPC request, notification, or "
                "response. [Batches went with 2025-06-18; earlier revisions take them.]",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "The body of the HTTP POST MUST be a single JSON-RPC request or notification.",
            ),
        },
    ),
    Rule(
        "client-http",
        "MUST",
        _TRANSPORTS,
        "The client MUST include an Accept header, listing both application/json and "
        "text/event-stream as supported content types. [...] clients using the Streamable HTTP "
        "transport MUST include it in the MCP-Session-Id header on all of their subsequent HTTP "
        "requests. [...] the client MUST include the MCP-Protocol-Version: <protocol-version> HTTP "
        "header on all subsequent requests to the MCP server",
        variants={
            **_http_2024(
                "The client MUST include an Accept header, listing both application/json and "
                "text/event-stream as supported content types. [...] clients using the Streamable HTTP "
                "transport MUST include it in the Mcp-Session-Id header on all of their subsequent HTTP "
                "requests."
            ),
            "2025-03-26": (
                _TRANSPORTS,
                "The client MUST include an Accept header, listing both application/json and "
                "text/event-stream as supported content types. [...] clients using the Streamable HTTP "
                "transport MUST include it in the Mcp-Session-Id header on all of their subsequent HTTP "
                "requests.",
            ),
            "2025-06-18": (
                _TRANSPORTS,
                "The client MUST include an Accept header, listing both application/json and "
                "text/event-stream as supported content types. [...] clients using the Streamable HTTP "
                "transport MUST include it in the Mcp-Session-Id header on all of their subsequent HTTP "
                "requests. [...] the client MUST include the MCP-Protocol-Version: <protocol-version> "
                "HTTP header on all subsequent requests to the MCP server",
            ),
            "2026-07-28": (
                _HTTP_2026,
                "The client MUST include an Accept header listing both application/json and "
                "text/event-stream as supported content types. The client MUST include the request "
                "metadata headers on each POST request.",
            ),
        },
    ),
    Rule(
        "capabilities",
        "judgement",
        "basic/lifecycle.mdx",
        "Both parties MUST: [...] Only use capabilities that were successfully negotiated [This "
        "binds the sender; how a receiver refuses (-32601 where the features name it) is a SHOULD at "
        "most.]",
        variants={
            **_per_revision(
                ("2024-11-05", "2025-03-26"),
                "basic/lifecycle.mdx",
                "Both parties SHOULD: [...] Only use capabilities that were successfully negotiated "
                "[This binds the sender; how a receiver refuses is not specified.]",
            ),
            "2026-07-28": (
                "basic/index.mdx",
                "A server MUST NOT rely on capabilities the client has not declared. [This binds the "
                "sender; how a receiver refuses (-32601 where the features name it) is a SHOULD at "
                "most.]",
            ),
        },
    ),
    Rule(
        "stream-ends",
        "SHOULD",
        _TRANSPORTS,
        "After the JSON-RPC response has been sent, the server SHOULD terminate the SSE stream.",
        variants={
            **_http_2024(
                "After all JSON-RPC responses have been sent, the server SHOULD close the SSE stream."
            ),
            "2025-03-26": (
                _TRANSPORTS,
                "After all JSON-RPC responses have been sent, the server SHOULD close the SSE stream.",
            ),
            "2025-06-18": (
                _TRANSPORTS,
                "After the JSON-RPC response has been sent, the server SHOULD close the SSE stream.",
            ),
            "2026-07-28": (_HTTP_2026, "The final JSON-RPC response SHOULD terminate the stream."),
        },
    ),
    Rule(
        "left-in-progress",
        "judgement",
        _TRANSPORTS,
        "Disconnection SHOULD NOT be interpreted as the client cancelling its request. [Work left "
        "running after the client has gone is allowed; it is recorded so a leak can be seen.]",
        variants={
            **_http_2024(
                "Disconnection SHOULD NOT be interpreted as the client cancelling its request. [Work "
                "left running after the client has gone is allowed; it is recorded so a leak can be seen.]"
            ),
            "2026-07-28": (
                _HTTP_2026,
                "Closing the SSE response stream MUST be treated by the server as cancellation of that "
                "request. [...] The server SHOULD stop work on the cancelled request as soon as "
                "practical [Work left running is recorded so a leak can be seen.]",
            ),
        },
    ),
    Rule(
        "resource-growth",
        "judgement",
        "basic/lifecycle.mdx",
        "During the operation phase, the client and server exchange messages according to the "
        "negotiated capabilities. [No sentence bounds a peer's memory or open files; growth past the "
        "threshold while messages come and go is recorded so a leak can be seen.]",
        variants=_per_revision(
            ("2026-07-28",),
            "basic/index.mdx",
            "All implementations MUST support the base protocol, versioning, and the message patterns. "
            "[No sentence bounds a peer's memory or open files; growth past the threshold while "
            "messages come and go is recorded so a leak can be seen.]",
        ),
    ),
)

#: (oracle, detail) -> rule id; an oracle alone (detail "") is its default.
_BY_FINDING: dict[tuple[str, str], str] = {
    ("alive", ""): "ping",
    ("alive", "hang"): "lifecycle",
    ("alive", "exit-status"): "lifecycle",
    ("alive", "no-initialize"): "lifecycle",
    ("alive", "no-request"): "lifecycle",
    ("alive", "no-initialize-answer"): "reply",
    ("alive", "wedged"): "reply",
    ("alive", "left-in-progress"): "ping",
    ("one-response", ""): "reply",
    ("one-response", "extra"): "one-reply",
    ("one-response", "batch-missing"): "batch-receive",
    ("one-response", "reused-id-stream"): "reused-id-reply",
    ("one-response", "reused-id"): "reused-id",
    ("one-response", "stream-never-ends"): "stream-ends",
    ("one-response", "left-in-progress"): "left-in-progress",
    ("no-response-to-notification", ""): "no-reply-to-notification",
    ("no-response-to-notification", "unknown-id"): "unasked-response",
    ("error-codes", ""): "error-code",
    ("error-codes", "utf8-accepted"): "utf8",
    ("error-codes", "null-id"): "error-null-id",
    ("valid-response", ""): "response-envelope",
    ("stdout", ""): "stdout",
    ("http-status", ""): "http-202",
    ("http-status", "5xx"): "http-server-error",
    ("http-status", "refused-valid"): "http-request-answer",
    ("http-status", "content-type"): "http-request-answer",
    ("http-status", "chunked"): "http-request-answer",
    ("http-status", "no-answer"): "http-request-answer",
    ("http-status", "wrong-method"): "http-wrong-method",
    ("http-status", "last-event-id"): "http-get",
    ("http-status", "resume"): "http-get",
    ("http-session", ""): "http-ended-session",
    ("http-session", "no-session-id"): "http-no-session",
    ("http-session", "unknown-session-id"): "http-unknown-session",
    ("http-session", "deleted-session"): "http-ended-session",
    ("http-session", "bad-protocol-version"): "http-protocol-version",
    ("http-session", "foreign-origin"): "http-origin",
    ("http-session", "foreign-host"): "http-host",
    ("http-session", "last-event-id-replay"): "http-replay",
    ("http-session", "resume-foreign"): "http-replay",
    ("http-session", "resume-lost"): "http-resume",
    ("version-negotiation", ""): "version-negotiation",
    ("version-negotiation", "error"): "version-error",
    ("valid-message", ""): "valid-message",
    ("valid-message", "batch"): "client-batch",
    ("client-ids", ""): "request-id",
    ("client-http", ""): "client-http",
    ("capabilities", ""): "capabilities",
    ("resources", ""): "resource-growth",
}


def rule_for(oracle: str, detail: str) -> str:
    """The rule a finding of ``oracle`` with ``detail`` breaks."""
    if oracle == "error-codes" and detail.startswith("missing-"):
        return "reply"  # nothing came back (JSON-RPC's examples answer even invalid JSON)
    if oracle == "error-codes" and detail == "result-instead-of-error":
        return "error-required"  # (a 2026-07-28 request without the revision in _meta)
    if oracle == "error-codes" and detail.startswith("result-instead-of-"):
        return "lenient-input"  # (the same grade for a server and for a client)
    if oracle == "valid-response" and detail.startswith("result:"):
        return "result-schema"
    return _BY_FINDING.get((oracle, detail)) or _BY_FINDING.get((oracle, ""), "lifecycle")


def grade_of(rule: str) -> str:
    """The grade (violation, deviation, note) a breach of ``rule`` gets."""
    return RULES[rule].grade


#: An oracle: its name, what it checks, the texts it enforces and where they are (its findings
#: cite the one sentence each breaks: :data:`RULES`).
class Oracle(NamedTuple):
    name: str
    rule: str
    spec: str
    source: str


ORACLES: dict[str, Oracle] = {
    o.name: o
    for o in (
        Oracle(
            "alive",
            "the peer stays alive and answers a ping after every case",
            "The receiver MUST respond promptly with an empty response.",
            "MCP basic/utilities/ping; basic/lifecycle (a session ends only by shutdown)",
        ),
        Oracle(
            "one-response",
            "every request gets exactly one response with its id, in time, unless cancelled",
            "Responses MUST include the same ID as the request they correspond to. [...] When a rpc call is "
            "made, the Server MUST reply with a Response, except for in the case of Notifications.",
            "MCP basic (Responses); JSON-RPC 2.0 section 5",
        ),
        Oracle(
            "no-response-to-notification",
            "nothing answers a notification, nothing comes unasked",
            "Notifications [...] The receiver MUST NOT send a response.",
            "MCP basic (Notifications); JSON-RPC 2.0 section 4.1",
        ),
        Oracle(
            "error-codes",
            "the JSON-RPC error codes for parse errors, invalid requests, unknown methods and invalid params",
            "-32700 Parse error: Invalid JSON was received by the server. -32600 Invalid Request: The JSON "
            "sent is not a valid Request object. -32601 Method not found. -32602 Invalid params. [...] If "
            "there was an error in detecting the id in the Request object (e.g. Parse error/Invalid "
            "Request), it MUST be Null.",
            "JSON-RPC 2.0 section 5.1; MCP basic (Requests: the ID MUST NOT be null; string or integer)",
        ),
        Oracle(
            "valid-response",
            "every response is valid for the negotiated revision",
            "Either a result or an error MUST be set. A response MUST NOT set both. [...] Error codes "
            "MUST be integers.",
            "MCP basic (Responses) and the revision's schema.json (result types)",
        ),
        Oracle(
            "stdout",
            "nothing but MCP messages on a stdio server's stdout",
            "The server MUST NOT write anything to its stdout that is not a valid MCP message.",
            "MCP basic/transports (stdio)",
        ),
        Oracle(
            "http-status",
            "HTTP status codes as Streamable HTTP says",
            "If the input is a JSON-RPC response or notification: If the server accepts the input, the "
            "server MUST return HTTP status code 202 Accepted with no body. If the server cannot accept the "
            "input, it MUST return an HTTP error status code (e.g., 400 Bad Request). [...] If the input is "
            "a JSON-RPC request, the server MUST either return Content-Type: text/event-stream [...] or "
            "Content-Type: application/json. [...] The server MUST either return Content-Type: "
            "text/event-stream in response to this HTTP GET, or else return HTTP 405 Method Not Allowed",
            "MCP basic/transports (Streamable HTTP, Sending Messages to the Server, Listening for Messages "
            "from the Server)",
        ),
        Oracle(
            "http-session",
            "session and version headers are checked",
            "Servers that require a session ID SHOULD respond to requests without an Mcp-Session-Id header "
            "(other than initialization) with HTTP 400 Bad Request. [...] it MUST respond to requests "
            "containing that session ID with HTTP 404 Not Found. [...] If the server receives a request "
            "with an invalid or unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request. "
            "[...] If the Origin header is present and invalid, servers MUST respond with HTTP 403 "
            "Forbidden.",
            "MCP basic/transports (Session Management, Protocol Version Header, Security Warning)",
        ),
        Oracle(
            "version-negotiation",
            "initialize is answered with the requested version when the server "
            "speaks it, and never with a version that does not exist",
            "If the server supports the requested protocol version, it MUST respond with the same version. "
            "Otherwise, the server MUST respond with another protocol version it supports.",
            "MCP basic/lifecycle (Version Negotiation)",
        ),
        Oracle(
            "valid-message",
            "every request and notification a client sends is valid for the negotiated revision",
            "Requests MUST include a string or integer ID. [...] Both parties MUST: [...] Only use "
            "capabilities that were successfully negotiated",
            "MCP basic (Requests), basic/lifecycle (Operation) and the revision's schema.json",
        ),
        Oracle(
            "client-ids",
            "a client never reuses a request id in a session and never sends a null one",
            "Unlike base JSON-RPC, the ID MUST NOT be null. The request ID MUST NOT have been "
            "previously used by the requestor within the same session.",
            "MCP basic (Requests)",
        ),
        Oracle(
            "capabilities",
            "a request that needs a capability the receiver did not advertise is "
            "refused with an error, -32601 Method not found (a note otherwise: the MUST binds the sender)",
            "Both parties MUST: [...] Only use capabilities that were successfully negotiated. [...] Servers "
            "that support prompts MUST declare the prompts capability [likewise tools, resources, logging]. "
            "[...] Servers SHOULD return standard JSON-RPC errors for common failure cases: Method not "
            "found: -32601 (Capability not supported) [...] Client does not support roots: -32601 (Method "
            "not found)",
            "MCP basic/lifecycle (Operation; Capability Negotiation), server/prompts, server/tools, "
            "server/resources, server/utilities/completion, client/roots (Error Handling); 2026-07-28 "
            'schema (MethodNotFoundError: "a method gated behind a server capability the server did not '
            'advertise")',
        ),
        Oracle(
            "resources",
            "a local target's RSS and open file descriptors do not grow past a threshold during a "
            "campaign (a note: a judgement call)",
            "During the operation phase, the client and server exchange messages according to the "
            "negotiated capabilities.",
            "MCP basic/lifecycle (Operation); the thresholds are --max-rss-growth and --max-fd-growth",
        ),
        Oracle(
            "client-http",
            "the headers a Streamable HTTP client must send",
            "The client MUST include an Accept header, listing both application/json and text/event-stream "
            "as supported content types. [...] clients using the Streamable HTTP transport MUST include it "
            "in the Mcp-Session-Id header on all of their subsequent HTTP requests. [...] the client MUST "
            "include the MCP-Protocol-Version: <protocol-version> HTTP header on all subsequent requests",
            "MCP basic/transports (Streamable HTTP: Sending Messages, Session Management, Protocol Version "
            "Header)",
        ),
    )
}
