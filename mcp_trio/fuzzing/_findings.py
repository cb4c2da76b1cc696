"""What the campaigns share and leave behind: the configuration, the :class:`Hunt` a campaign
plugs into the search, its stats and findings, transcripts (format, save, load) and the report.

The lowest module of the runner: the server and client campaigns, the state machine and
:mod:`.runner` all build on it; it imports none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ..types import _versions
from . import oracles as orc

__all__ = [
    "CampaignStats",
    "Finding",
    "FuzzConfig",
    "Hunt",
    "TargetError",
    "load_transcript",
    "summary",
    "violations_found",
    "write_report",
]

TRANSCRIPT_FORMAT = "mcp-trio-fuzz-transcript/1"


class TargetError(Exception):
    """The target cannot be fuzzed at all (no answer to initialize, cannot start)."""


@dataclass
class FuzzConfig:
    target: Any  # drv.StdioTarget | drv.HttpTarget | client.ClientTarget
    revisions: Sequence[str] = (_versions.SUPPORTED_VERSIONS[1],)
    campaigns: Sequence[str] = ("valid", "invalid", "lifecycle")
    seed: int = 0
    max_examples: int | None = 100  # per campaign and revision
    time_budget: float | None = None  # seconds per campaign and revision (instead of max_examples)
    timeout: float = 5.0  # seconds to wait for the answers of one case
    shrink_time: float = 20.0  # seconds of shrinking per finding
    #: Findings per campaign and revision; the campaign stops there (the summary says so),
    #: since past a handful a target's findings are mostly the same bug again.
    max_findings: int = 5
    run_time: float = 30.0  # --client: seconds one client run may take before it counts as hung
    #: Fuzz a revision even when the target's initialize answer names another one
    #: (by default such a campaign is skipped: the target does not speak it).
    all_revisions: bool = False
    skip_probes: frozenset[str] = frozenset()  # probe kinds (Item notes, e.g. "deep_nesting") left out
    out_dir: Path | None = None
    progress: Callable[[str], None] = lambda line: None


@dataclass
class Finding:
    revision: str
    campaign: str
    violation: orc.Violation
    transcript: dict[str, Any]
    path: Path | None = None


@dataclass
class CampaignStats:
    revision: str
    campaign: str
    examples: int = 0
    sessions: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    not_reproduced: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None
    aborted: str | None = None  # the campaign stopped early on an error of its own
    capped: bool = False  # stopped at FuzzConfig.max_findings

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "campaign": self.campaign,
            "examples": self.examples,
            "sessions": self.sessions,
            "seconds": round(self.seconds, 2),
            "findings": [
                {
                    "key": f.violation.key,
                    "message": f.violation.message,
                    "severity": f.violation.severity,
                    "transcript": str(f.path) if f.path else None,
                }
                for f in self.findings
            ],
            "not_reproduced": self.not_reproduced,
            **({"skipped": self.skipped} if self.skipped else {}),
            **({"aborted": self.aborted} if self.aborted else {}),
            **({"capped": True} if self.capped else {}),
        }


@dataclass
class Hunt:
    """What a campaign plugs into :func:`~.runner._search`.

    ``execute(case)`` runs one example and returns (payloads, notes, violations);
    ``replay(payloads, notes)`` runs the smallest failing case again on a fresh
    session and returns (transcript, violations); ``reset()`` drops any live state.
    """

    strategy: st.SearchStrategy[Any]
    execute: Callable[[Any], tuple[list[bytes], list[str], list[orc.Violation]]]
    replay: Callable[[list[bytes], list[str]], tuple[dict[str, Any], list[orc.Violation]]]
    reset: Callable[[], None]


def keep_if_replayed(
    cfg: FuzzConfig,
    stats: CampaignStats,
    revision: str,
    campaign: str,
    key: str,
    violations: Sequence[orc.Violation],
    size: int,
    transcript: Callable[[], dict[str, Any]],
) -> None:
    """Report ``key`` only if the replay's ``violations`` show it again (saving the
    ``transcript()`` of the replay); otherwise count it as not reproduced."""
    hit = next((v for v in violations if v.key == key), None)
    if hit is None:
        stats.not_reproduced.append({"key": key, "payloads": size})
        cfg.progress(f"{revision} {campaign}: {key} did not reproduce on replay; dropped")
        return
    finding = Finding(revision, campaign, hit, transcript())
    if cfg.out_dir is not None:
        finding.path = save_transcript(cfg.out_dir, finding, len(stats.findings) + 1)
    stats.findings.append(finding)
    cfg.progress(f"{revision} {campaign}: FINDING {hit.key}: {hit.message}")


def violations_found(stats: Sequence[CampaignStats]) -> bool:
    """Whether any finding is a violation (notes alone do not fail a run)."""
    return any(f.violation.severity != "note" for s in stats for f in s.findings)


# ------------------------------------------------------------ transcripts


def stateful_transcript(
    cfg: FuzzConfig, revision: str, steps: list[dict[str, Any]], violations: list[orc.Violation], runner: Any
) -> dict[str, Any]:
    """The transcript of a replayed state-machine run: its steps instead of one case."""
    return {
        "format": TRANSCRIPT_FORMAT,
        "target": cfg.target.describe(),
        "revision": revision,
        "campaign": "stateful",
        "timeout": cfg.timeout,
        "seed": cfg.seed,
        "steps": steps,
        "case": [],
        "violations": [v.to_json() for v in violations],
        "events": runner.events,
    }


def save_transcript(out_dir: Path, finding: Finding, n: int) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() else "-" for c in finding.violation.key).strip("-")
    path = out_dir / f"finding-{finding.revision}-{finding.campaign}-{n:02d}-{safe}.json"
    data = {**finding.transcript, "finding": finding.violation.to_json()}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def load_transcript(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if data.get("format") != TRANSCRIPT_FORMAT:
        raise ValueError(f"{path} is not a {TRANSCRIPT_FORMAT} transcript")
    loaded: dict[str, Any] = data
    return loaded


def write_report(cfg: FuzzConfig, stats: Sequence[CampaignStats]) -> None:
    assert cfg.out_dir is not None
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "format": "mcp-trio-fuzz-report/1",
        "target": cfg.target.describe(),
        "seed": cfg.seed,
        "max_examples": cfg.max_examples,
        "time_budget": cfg.time_budget,
        "campaigns": [s.to_json() for s in stats],
        "oracles": {
            name: {"rule": o.rule, "spec": o.spec, "source": o.source} for name, o in orc.ORACLES.items()
        },
    }
    (cfg.out_dir / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    (cfg.out_dir / "summary.txt").write_text(summary(cfg, stats))


def summary(cfg: FuzzConfig, stats: Sequence[CampaignStats]) -> str:
    lines = [f"mcp-trio fuzz: {json.dumps(cfg.target.describe())}, seed {cfg.seed}", ""]
    total = 0
    for s in stats:
        status = (
            f"skipped ({s.skipped})"
            if s.skipped
            else (
                f"{s.examples} examples, {s.sessions} sessions, {s.seconds:.1f} s, {len(s.findings)} findings"
            )
        )
        lines.append(f"{s.revision}  {s.campaign:<10} {status}")
        if s.aborted:
            lines.append(f"    ! ABORTED after {s.examples} examples: {s.aborted}")
        if s.capped:
            lines.append(f"    ! stopped at {cfg.max_findings} findings (--max-findings); more may remain")
        for f in s.findings:
            total += 1
            grade = " (note)" if f.violation.severity == "note" else ""
            lines.append(f"    - {f.violation.key}{grade}: {f.violation.message}")
            lines.append(f"      replay: mcp-trio fuzz replay {f.path}" if f.path else "")
        for nr in s.not_reproduced:
            lines.append(f"    ~ {nr['key']}: seen, did not reproduce on replay (not reported)")
    notes = sum(1 for s in stats for f in s.findings if f.violation.severity == "note")
    lines += [
        "",
        f"{total} finding(s)"
        + (f", {notes} of them notes (judgement calls, not violations)." if notes else "."),
    ]
    return "\n".join(line for line in lines if line is not None) + "\n"
