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
