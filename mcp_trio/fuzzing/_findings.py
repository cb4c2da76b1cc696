"""What the campaigns share and leave behind: the configuration, the :class:`Hunt` a campaign
plugs into the search, its stats and findings, transcripts (format, save, load) and the report.

The lowest module of the runner: the server and client campaigns, the state machine and
:mod:`.runner` all build on it; it imports none of them.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import Phase, Verbosity, settings
from hypothesis import strategies as st

from ..types import _versions
from . import oracles as orc
from ._coverage import CoverageFeed
from ._resources import ResourceWatch
from .strategies import ALL_HEALTH_CHECKS

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

#: /2: each finding carries the rule it breaks (``rule``, ``cites``) and its grade; a reused id
#: answered short is keyed ``one-response:reused-id[-stream]``.  /1 transcripts still load
#: (:func:`load_transcript` upgrades them).
TRANSCRIPT_FORMAT = "mcp-trio-fuzz-transcript/2"
OLD_TRANSCRIPT_FORMATS = ("mcp-trio-fuzz-transcript/1",)


class TargetError(Exception):
    """The target cannot be fuzzed at all (no answer to initialize, cannot start)."""


class TargetDown(TargetError):
    """The target cannot start, or died outside any case: the run cannot go on (exit status 2)."""


@dataclass
class Status:
    """Where a run is, for a progress display: the campaign, its phase (``generating``,
    ``shrinking``, ``replaying``, ``minimizing``), and the counts so far."""

    revision: str
    campaign: str
    phase: str
    examples: int
    messages: int
    findings: int


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
    #: Called on every example and change of phase (a progress display; the CLI draws it).
    status: Callable[[Status], None] = lambda status: None
    #: Deviations (SHOULDs) fail the run too, not only violations (MUSTs).
    strict: bool = False
    #: A local target (``--stdio``) whose RSS grows by more MB than this in a campaign is noted.
    max_rss_growth: float = 200.0
    #: ... or whose open file descriptors grow by more than this.
    max_fd_growth: int = 100
    #: ``--coverage``: what the target process ran (its environment must come from
    #: ``coverage.environ``); steers the search toward new code and is reported per campaign.
    coverage: CoverageFeed | None = None
    #: With ``coverage``: steer the search by it (False: only report it, a baseline).
    steer: bool = True


@dataclass
class Finding:
    revision: str
    campaign: str
    violation: orc.Violation
    transcript: dict[str, Any]
    path: Path | None = None
    #: Other violations the same (smallest) case showed on its replay: symptoms of this cause,
    #: not findings of their own.
    also: list[str] = field(default_factory=list)
    #: Other cases of the campaign that showed the same violation after it was found (the same
    #: cause: one finding, not one per case), each's offending payload, at most :data:`EXAMPLES`.
    examples: list[str] = field(default_factory=list)

    def payload(self) -> str:
        """The offending input, as a short excerpt: the case's messages, a client's plan or a
        state machine's steps."""
        return offending_payload(self.transcript)

    def add_example(self, payload: str) -> None:
        """Count another case of this cause (``payload``: its offending input), unless it is this
        finding's own or already listed, or :data:`EXAMPLES` are."""
        if payload and len(self.examples) < EXAMPLES and payload not in (self.payload(), *self.examples):
            self.examples.append(payload)


#: Other cases a finding lists at most (report.json, the summary, SARIF and JUnit show them).
EXAMPLES = 10


#: Characters of the offending payload a summary shows (report.json keeps more).
PAYLOAD_EXCERPT = 300


def offending_payload(transcript: dict[str, Any], limit: int = 2000) -> str:
    """What a transcript sent that broke the rule, one line, at most ``limit`` characters."""
    if transcript.get("case"):
        text = " | ".join(
            entry["text"]
            if "text" in entry
            else base64.b64decode(entry.get("base64", "")).decode("utf-8", "backslashreplace")
            for entry in transcript["case"]
        )
    elif "plan" in transcript:
        text = "plan " + json.dumps(transcript["plan"], ensure_ascii=False, separators=(",", ":"))
    elif "steps" in transcript:
        text = " | ".join(
            step["rule"] + (" " + " ".join(step["payloads"]) if step.get("payloads") else "")
            for step in transcript["steps"]
        )
    else:
        return ""
    cut = " ".join(text[: limit + 1].split())  # (one line: an indented message's newlines go)
    return cut if len(text) <= limit else cut[: limit - 3] + "..."


@dataclass
class CampaignStats:
    revision: str
    campaign: str
    examples: int = 0  # the corpus' cases included
    corpus: int = 0  # cases of the corpus of known-bad inputs run (max_examples bounds the others)
    sessions: int = 0
    seconds: float = 0.0
    messages: int = 0  # JSON-RPC messages (or HTTP requests) sent to the target
    findings: list[Finding] = field(default_factory=list)
    not_reproduced: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None
    aborted: str | None = None  # the campaign stopped early on an error of its own
    capped: bool = False  # stopped at FuzzConfig.max_findings
    interrupted: bool = False  # stopped by Ctrl-C (SIGINT)
    resources: dict[str, Any] | None = None  # ResourceWatch.to_json() of a local target
    coverage: dict[str, Any] | None = None  # CoverageFeed.to_json(): what the campaign reached

    def to_json(self) -> dict[str, Any]:
        return {
            "revision": self.revision,
            "campaign": self.campaign,
            "examples": self.examples,
            "corpus": self.corpus,
            "sessions": self.sessions,
            "messages": self.messages,
            "seconds": round(self.seconds, 2),
            "findings": [
                {
                    "key": f.violation.key,
                    "message": f.violation.message,
                    "severity": f.violation.severity,
                    "rule": f.violation.rule,
                    "payload": f.payload(),
                    **({"also": f.also} if f.also else {}),
                    **({"examples": f.examples} if f.examples else {}),
                    "transcript": str(f.path) if f.path else None,
                }
                for f in self.findings
            ],
            "not_reproduced": self.not_reproduced,
            **({"skipped": self.skipped} if self.skipped else {}),
            **({"aborted": self.aborted} if self.aborted else {}),
            **({"capped": True} if self.capped else {}),
            **({"interrupted": True} if self.interrupted else {}),
            **({"resources": self.resources} if self.resources else {}),
            **({"coverage": self.coverage} if self.coverage else {}),
        }


@dataclass
class Hunt:
    """What a campaign plugs into :func:`~.runner._search`.

    ``execute(case)`` runs one example and returns (payloads, notes, violations);
    ``replay(payloads, notes)`` runs the smallest failing case again on a fresh
    session and returns (transcript, violations); ``reset()`` drops any live state.  A
    campaign against a local process has a ``watch`` of its resources, fed by ``execute``;
    ``pid()`` is the live process (None: none).  ``corpus`` holds the cases run once each,
    in order, before hypothesis generates any (the known-bad inputs); ``sketch(payloads,
    notes)`` is the transcript of a case that was not replayed (a run interrupted while
    shrinking keeps it).
    """

    strategy: st.SearchStrategy[Any]
    execute: Callable[[Any], tuple[list[bytes], list[str], list[orc.Violation]]]
    replay: Callable[[list[bytes], list[str]], tuple[dict[str, Any], list[orc.Violation]]]
    reset: Callable[[], None]
    watch: ResourceWatch | None = None
    pid: Callable[[], int | None] = lambda: None
    corpus: Sequence[Any] = ()
    sketch: Callable[[list[bytes], list[str]], dict[str, Any]] = lambda payloads, notes: {}


def campaign_deadline(cfg: FuzzConfig, started: float) -> float:
    """When a campaign started at ``started`` (``time.monotonic()``) must be over: ``time_budget``
    later, shrinking, replays and probes included (infinity without a budget)."""
    return started + cfg.time_budget if cfg.time_budget is not None else float("inf")


def within_budget(cfg: FuzzConfig, stats: CampaignStats, started: float) -> bool:
    """Whether a campaign may run another example: wall time (``time_budget``, from ``started``)
    and the count of generated examples (``max_examples``; the corpus is not counted) both hold,
    whichever is set."""
    if cfg.time_budget is not None and time.monotonic() - started >= cfg.time_budget:
        return False
    if cfg.max_examples is not None and stats.examples - stats.corpus >= cfg.max_examples:
        return False
    return cfg.time_budget is not None or cfg.max_examples is not None


def search_settings(max_examples: int, targeted: bool = False, **more: Any) -> settings:
    """The hypothesis settings of every campaign's search: no database, no deadline, quiet,
    generate and shrink only (and ``targeted``: the target phase, which mutates the examples
    that scored best toward higher scores), the first failure only."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        suppress_health_check=ALL_HEALTH_CHECKS,
        verbosity=Verbosity.quiet,
        phases=[Phase.generate, *([Phase.target] if targeted else []), Phase.shrink],
        report_multiple_bugs=False,
        **more,
    )


def keep_if_replayed(
    cfg: FuzzConfig,
    stats: CampaignStats,
    revision: str,
    campaign: str,
    key: str,
    violations: Sequence[orc.Violation],
    size: int,
    transcript: Callable[[], dict[str, Any]],
) -> Finding:
    """Report ``key`` as a finding if the replay's ``violations`` show it again (saving the
    ``transcript()`` of the replay); otherwise keep it as a *flaky* finding, with the same
    transcript (the case's payloads and what the replay saw), which fails no run.  The other
    violations of the replay are the same cause's symptoms: listed in the finding's ``also``."""
    hit = next((v for v in violations if v.key == key), None)
    if hit is None:
        oracle, _, detail = key.partition(":")
        seen = orc.Violation(oracle, "", detail)
        hit = orc.Violation(
            oracle,
            f"seen in the campaign ({seen.severity}), not on a replay on a fresh session",
            detail,
            severity="flaky",
            rule=seen.rule,
        )
    also = sorted({v.key for v in violations} - {key})
    finding = add_finding(cfg, stats, Finding(revision, campaign, hit, transcript(), also=also))
    if hit.severity == "flaky":
        stats.not_reproduced.append(
            {"key": key, "payloads": size, "transcript": str(finding.path) if finding.path else None}
        )
        cfg.progress(f"{revision} {campaign}: {key} did not reproduce on replay; kept as flaky")
    else:
        cfg.progress(f"{revision} {campaign}: FINDING ({hit.severity}) {hit.key}: {hit.message}")
    return finding


def keep_unreplayed(
    cfg: FuzzConfig,
    stats: CampaignStats,
    revision: str,
    campaign: str,
    seen: Sequence[orc.Violation],
    key: str,
    transcript: dict[str, Any],
) -> Finding:
    """Keep the finding being shrunk when the run is interrupted (Ctrl-C): the smallest case so
    far, graded as seen in the campaign, its transcript saying it was not replayed."""
    hit = next((v for v in seen if v.key == key), None) or orc.Violation(*_split(key))
    hit = orc.Violation(
        hit.oracle,
        f"{hit.message} (interrupted while shrinking: not replayed)",
        hit.detail,
        severity=hit.severity,
        rule=hit.rule,
    )
    transcript = {
        **transcript,
        "interrupted": "Ctrl-C while shrinking: the smallest case so far, not replayed",
    }
    also = sorted({v.key for v in seen} - {key})
    finding = add_finding(cfg, stats, Finding(revision, campaign, hit, transcript, also=also))
    cfg.progress(f"{revision} {campaign}: kept {key} as found so far (interrupted while shrinking)")
    return finding


def _split(key: str) -> tuple[str, str, str]:
    oracle, _, detail = key.partition(":")
    return oracle, "seen in the campaign", detail


def add_finding(cfg: FuzzConfig, stats: CampaignStats, finding: Finding) -> Finding:
    """Count ``finding`` in ``stats`` and save its transcript when the run has an ``out_dir``."""
    if cfg.out_dir is not None:
        finding.path = save_transcript(cfg.out_dir, finding, len(stats.findings) + 1)
    stats.findings.append(finding)
    return finding


def record_resources(cfg: FuzzConfig, stats: CampaignStats, hunt: Hunt) -> None:
    """The last sample of a campaign's ``hunt.watch``: its numbers in ``stats`` and a finding (a
    note) for each growth past the thresholds, with the samples as its transcript (nothing to
    replay: the campaign is the case)."""
    watch = hunt.watch
    if watch is None:
        return
    watch.end(hunt.pid())
    stats.resources = watch.to_json()
    for v in watch.violations():
        transcript = {
            "format": TRANSCRIPT_FORMAT,
            "target": cfg.target.describe(),
            "revision": stats.revision,
            "campaign": stats.campaign,
            "case": [],
            "resources": stats.resources,
            "violations": [v.to_json()],
        }
        add_finding(cfg, stats, Finding(stats.revision, stats.campaign, v, transcript))
        cfg.progress(f"{stats.revision} {stats.campaign}: FINDING ({v.severity}) {v.key}: {v.message}")


def violations_found(stats: Sequence[CampaignStats], strict: bool = False) -> bool:
    """Whether the findings fail the run: any violation (a MUST broken), and with ``strict``
    any deviation (a SHOULD) too; notes and flaky findings never do."""
    failing = {"violation", "deviation"} if strict else {"violation"}
    return any(f.violation.severity in failing for s in stats for f in s.findings)


#: Grades from the strongest: a group of findings takes the strongest one reproduced.
GRADES = ("violation", "deviation", "note", "flaky")


def grouped(stats: Sequence[CampaignStats]) -> list[dict[str, Any]]:
    """The findings by cause: one entry per rule broken and behaviour (the finding key), over every
    revision and campaign, graded by the strongest of its findings (a flaky one only when none
    reproduced).  An entry shows the payload of its first strongest finding; ``examples`` lists
    the other cases of the same cause (the other findings' payloads, a flaky one marked so, and
    the cases each finding counted), each with where it was seen; ``transcripts`` every file."""
    members: dict[str, list[tuple[CampaignStats, Finding]]] = {}
    for s in stats:
        for f in s.findings:
            members.setdefault(f.violation.key, []).append((s, f))
    out = []
    for key, found in members.items():
        s, first = min(found, key=lambda sf: _grade_rank(sf[1].violation.severity))
        entry: dict[str, Any] = {
            "key": key,
            "severity": first.violation.severity,
            "message": first.violation.message,
            "cites": orc.RULES[first.violation.rule].cite(first.revision),
            "payload": first.payload(),
            "also": [],
            "revisions": [],
            "campaigns": [],
            "examples": [],
            "transcripts": [],
        }
        shown = {entry["payload"]}
        for s, f in found:
            for name, values in (("revisions", [f.revision]), ("campaigns", [s.campaign]), ("also", f.also)):
                entry[name] += [value for value in values if value not in entry[name]]
            flaky = f.violation.severity == "flaky" and first.violation.severity != "flaky"
            for payload in ([f.payload()] if f is not first else []) + f.examples:
                if payload and payload not in shown and len(entry["examples"]) < EXAMPLES:
                    shown.add(payload)
                    where = {"revision": f.revision, "campaign": s.campaign}
                    entry["examples"].append(
                        {"payload": payload, **where, **({"flaky": True} if flaky else {})}
                    )
            if f.path is not None:
                entry["transcripts"].append(str(f.path))
        out.append(entry)
    return out


def _grade_rank(severity: str) -> int:
    return GRADES.index(severity) if severity in GRADES else 0


def add_example(
    stats: CampaignStats, violations: Sequence[orc.Violation], found: set[str], payload: str
) -> None:
    """A case that showed violations already found (``found``) in the campaign: another case of
    their cause, counted by the finding of that key (or the finding listing it in ``also``)."""
    for key in sorted({v.key for v in violations} & found):
        finding = next((f for f in stats.findings if f.violation.key == key), None)
        finding = finding or next((f for f in stats.findings if key in f.also), None)
        if finding is not None:
            finding.add_example(payload)


# ------------------------------------------------------------ transcripts


def stateful_transcript(
    cfg: FuzzConfig, revision: str, steps: list[dict[str, Any]], violations: list[orc.Violation], runner: Any
) -> dict[str, Any]:
    """The transcript of a replayed state-machine run: its steps instead of one case (``runner``
    None: a run not replayed, without events)."""
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
        "events": runner.events if runner is not None else [],
    }


def save_transcript(out_dir: Path, finding: Finding, n: int) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() else "-" for c in finding.violation.key).strip("-")
    path = out_dir / f"finding-{finding.revision}-{finding.campaign}-{n:02d}-{safe}.json"
    data = {**finding.transcript, "finding": finding.violation.to_json(finding.revision)}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def load_transcript(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if data.get("format") in OLD_TRANSCRIPT_FORMATS:
        data = upgrade_transcript(data)
    if data.get("format") != TRANSCRIPT_FORMAT:
        raise ValueError(f"{path} is not a {TRANSCRIPT_FORMAT} transcript")
    loaded: dict[str, Any] = data
    return loaded


def upgrade_transcript(data: dict[str, Any]) -> dict[str, Any]:
    """A /1 transcript as /2: its finding graded and citing its rule; a reused id answered once
    (keyed ``one-response:missing`` in /1) keyed as a reused id."""
    out = {**data, "format": TRANSCRIPT_FORMAT}
    finding = data.get("finding")
    if not isinstance(finding, dict) or not isinstance(finding.get("key"), str):
        return out
    oracle, _, detail = finding["key"].partition(":")
    ids = [json.dumps(m.get("id")) for m in _case_messages(data) if "method" in m and "id" in m]
    if finding["key"] == "one-response:missing" and ids and len(set(ids)) < len(ids):
        detail = "reused-id-stream" if data.get("target", {}).get("kind") == "http" else "reused-id"
    graded = orc.Violation(oracle, str(finding.get("message", "")), detail)
    severity = finding.get("severity") if finding.get("severity") in ("note", "flaky") else graded.severity
    out["finding"] = {**finding, **graded.to_json(data.get("revision")), "severity": severity}
    return out


def _case_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for entry in data.get("case", []):
        try:
            msg = json.loads(entry.get("text", ""))
        except ValueError:
            continue
        out += [m for m in (msg if isinstance(msg, list) else [msg]) if isinstance(m, dict)]
    return out


def outcome(cfg: FuzzConfig, stats: Sequence[CampaignStats], error: str | None = None) -> str:
    """How the run ended: ``error`` (the target could not start or died outside a finding: exit
    status 2), ``interrupted`` (Ctrl-C: 130), ``failed`` (findings that fail it: 1) or ``passed``."""
    if error is not None:
        return "error"
    if any(s.interrupted for s in stats):
        return "interrupted"
    return "failed" if violations_found(stats, cfg.strict) else "passed"


def write_report(cfg: FuzzConfig, stats: Sequence[CampaignStats], error: str | None = None) -> None:
    """report.json and summary.txt in ``cfg.out_dir``; ``error`` is what stopped the run, if an
    error did (the report says ``"outcome": "error"`` and ``"failed": true`` then)."""
    assert cfg.out_dir is not None
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    ended = outcome(cfg, stats, error)
    report = {
        "format": "mcp-trio-fuzz-report/1",
        "target": cfg.target.describe(),
        "seed": cfg.seed,
        "max_examples": cfg.max_examples,
        "time_budget": cfg.time_budget,
        "strict": cfg.strict,
        "outcome": ended,
        "failed": ended != "passed",
        **({"error": error} if error is not None else {}),
        **({"interrupted": True} if any(s.interrupted for s in stats) else {}),
        "campaigns": [s.to_json() for s in stats],
        "findings": grouped(stats),
        "oracles": {
            name: {"rule": o.rule, "spec": o.spec, "source": o.source} for name, o in orc.ORACLES.items()
        },
    }
    (cfg.out_dir / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    (cfg.out_dir / "summary.txt").write_text(summary(cfg, stats, error))


def coverage_line(coverage: dict[str, Any]) -> str:
    """What a campaign reached, in words (``CoverageFeed.to_json()``)."""
    if coverage.get("kind") == "node":
        return (
            f"{coverage['blocks']} blocks in {coverage['functions']} functions of "
            f"{coverage['scripts']} scripts (Node)"
        )
    return f"{coverage['lines']} lines, {coverage['arcs']} arcs in {coverage['files']} files (Python)"


_MARK = {"violation": "!", "deviation": "~", "note": "-", "flaky": "?"}


def _excerpt(payload: str) -> str:
    return payload if len(payload) <= PAYLOAD_EXCERPT else payload[: PAYLOAD_EXCERPT - 3] + "..."


def summary(cfg: FuzzConfig, stats: Sequence[CampaignStats], error: str | None = None) -> str:
    """The run in a few lines per campaign and finding, ending with how it ended (``error``: what
    stopped it, when an error did)."""
    lines = [f"mcp-trio fuzz: {json.dumps(cfg.target.describe())}, seed {cfg.seed}", ""]
    for s in stats:
        status = (
            f"skipped ({s.skipped})"
            if s.skipped
            else (
                f"{s.examples} examples{f' ({s.corpus} known-bad)' if s.corpus else ''}, {s.messages} "
                f"messages, {s.sessions} sessions, {s.seconds:.1f} s, "
                f"{len(s.findings)} findings"
            )
        )
        lines.append(f"{s.revision}  {s.campaign:<12} {status}")
        if s.aborted:
            lines.append(f"    ! ABORTED after {s.examples} examples: {s.aborted}")
        if s.interrupted:
            lines.append(f"    ! INTERRUPTED (Ctrl-C) after {s.examples} examples")
        if s.capped:
            lines.append(f"    ! stopped at {cfg.max_findings} findings (--max-findings); more may remain")
        if s.resources and s.resources.get("watched"):
            rss, fds = s.resources["rss"], s.resources["fds"]
            lines.append(
                f"    resources: RSS {rss['rss_mb'][0]} -> {rss['rss_mb'][1]} MB, open fds "
                f"{fds['fds'][0]} -> {fds['fds'][1]} (the largest growth of one process)"
            )
        if s.coverage:
            lines.append(f"    coverage: {coverage_line(s.coverage)}")
    groups = grouped(stats)
    if groups:
        lines += [
            "",
            "Findings (one per rule and behaviour; grades: ! violation, ~ deviation, - note, ? flaky):",
        ]
    for g in groups:
        cites = g["cites"]
        lines.append(f"  {_MARK.get(g['severity'], '!')} {g['key']} [{g['severity']}] {g['message']}")
        lines.append(f"      in: {', '.join(g['revisions'])} ({', '.join(g['campaigns'])})")
        lines.append(f'      rule ({cites["level"]}): {cites["document"]}: "{cites["text"]}"')
        if g["payload"]:
            lines.append(f"      payload: {_excerpt(g['payload'])}")
        if g["also"]:
            lines.append(f"      also seen (same case, same cause): {', '.join(g['also'])}")
        for example in g["examples"]:
            flaky = ", flaky" if example.get("flaky") else ""
            lines.append(
                f"      same cause ({example['revision']} {example['campaign']}{flaky}): "
                f"{_excerpt(example['payload'])}"
            )
        for path in g["transcripts"]:  # (a resource growth finding has samples, no case to replay)
            replayable = not g["key"].startswith("resources:")
            lines.append(
                f"      replay: mcp-trio fuzz replay {path}" if replayable else f"      samples: {path}"
            )
    counts = {grade: sum(1 for g in groups if g["severity"] == grade) for grade in _MARK}
    ended = outcome(cfg, stats, error)
    verdict = {
        "error": f"ERROR: {error}",
        "interrupted": "INTERRUPTED (Ctrl-C).",
        "failed": "FAILED.",
        "passed": "passed.",
    }[ended]
    if ended == "interrupted" and violations_found(stats, cfg.strict):
        verdict = "INTERRUPTED (Ctrl-C); FAILED."
    lines += [
        "",
        f"{len(groups)} finding(s): {counts['violation']} violation(s) (MUST), {counts['deviation']} "
        f"deviation(s) (SHOULD; {'failing with --strict' if cfg.strict else 'failing only with --strict'}), "
        f"{counts['note']} note(s), {counts['flaky']} flaky. {verdict}",
    ]
    return "\n".join(lines) + "\n"
