"""A :class:`~mcp_trio.fuzzing.oracles.CaseView` built by hand, for tests of the oracles alone."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp_trio.fuzzing import driver as drv
from mcp_trio.fuzzing import oracles as orc


def case_view(
    revision: str,
    payloads: Sequence[bytes],
    answers: Sequence[dict[str, Any]],
    transport: str = "stdio",
    **more: Any,
) -> orc.CaseView:
    """What a live peer that sent ``answers`` (and answered the probe) to ``payloads`` shows."""
    received = [drv.Received(0.0, json.dumps(a).encode(), message=a, parsed=True) for a in answers]
    fields: dict[str, Any] = {
        "revision": revision,
        "transport": transport,
        "payloads": list(payloads),
        "received": received,
        "http": [],
        "junk": [],
        "alive": True,
        "exit_code": None,
        "probe_id": None,
        "probe_answered": True,
        "cancelled": set(),
        "previously_answered": set(),
        **more,
    }
    return orc.CaseView(**fields)


#: One step of a client plan: a valid request, a valid notification, an unknown method.
CLIENT_STEP: list[dict[str, Any]] = [
    {"note": "valid", "message": {"jsonrpc": "2.0", "id": 1, "method": "roots/list"}},
    {
        "note": "valid",
        "message": {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "x"},
        },
    },
    {"note": "unknown_method", "message": {"jsonrpc": "2.0", "id": 1, "method": "fuzz/unknown"}},
]


def client_campaign_argv(client: str, out: str, *options: str, examples: int, seed: int) -> list[str]:
    """``mcp-trio fuzz`` arguments of a short client campaign against ``client``
    (3 s per answer, 20 s per run, 5 s of shrinking), ``options`` inserted."""
    return [
        "fuzz",
        "--client",
        client,
        *options,
        "--max-examples",
        str(examples),
        "--timeout",
        "3",
        "--run-time",
        "20",
        "--shrink-time",
        "5",
        "--seed",
        str(seed),
        "--out",
        out,
    ]
