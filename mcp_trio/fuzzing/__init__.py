"""Fuzzing any MCP implementation: strategies, raw drivers, oracles and the campaign runner.

Needs hypothesis (``pip install 'mcp-trio[fuzz]'``); the rest of mcp-trio
never imports this package.  The command is ``mcp-trio fuzz`` (see
``fuzz/README.md``).

* :mod:`.strategies`: hypothesis strategies for valid messages of every
  revision (derived from the generated types) and for invalid traffic.
* :mod:`.driver`: raw stdio and Streamable HTTP drivers that send bytes.
* :mod:`.oracles`: what a peer must never do, each finding graded by the rule it breaks
  (:data:`RULES`: the MUST or SHOULD sentence, its document and revision).
* :mod:`.stateful`: a hypothesis state machine for long sessions (``stateful``).
* :mod:`.client`: a fuzzing server and the client-side oracles (``--client``).
* :mod:`.runner`: campaigns, shrinking, replay, transcripts and reports.
* :mod:`.wire`: the oracles on live traffic, message by message (``--validate``).
* :func:`coverage_feed`: what a ``--stdio`` target process ran, read over a side channel
  (``--coverage``), steering the search toward new code.
"""

from __future__ import annotations

try:
    import hypothesis as _hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError("mcp_trio.fuzzing needs hypothesis: pip install 'mcp-trio[fuzz]'") from exc

from . import runner
from ._coverage import CoverageFeed, coverage_feed
from .client import ClientTarget
from .driver import HttpTarget, StdioTarget
from .oracles import ORACLES, RULES, Violation, check, classify
from .runner import (
    CAMPAIGNS,
    Finding,
    FuzzConfig,
    Interrupted,
    Session,
    TargetFailed,
    load_transcript,
    replay,
    run,
)
from .strategies import cases, from_type, invalid_items, valid_items, valid_message
from .wire import Policy, Validator, WireCheck

__all__ = [
    "CAMPAIGNS",
    "ClientTarget",
    "CoverageFeed",
    "ORACLES",
    "RULES",
    "Finding",
    "FuzzConfig",
    "HttpTarget",
    "Interrupted",
    "Policy",
    "Session",
    "StdioTarget",
    "TargetFailed",
    "Validator",
    "Violation",
    "WireCheck",
    "cases",
    "check",
    "classify",
    "coverage_feed",
    "from_type",
    "invalid_items",
    "load_transcript",
    "replay",
    "run",
    "runner",
    "valid_items",
    "valid_message",
]
