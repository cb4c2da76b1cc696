"""A run's findings for CI systems: JUnit XML (:func:`junit_xml`) and SARIF 2.1.0
(:func:`sarif`), from the same deduplicated findings as the report (:func:`~._findings.grouped`).

JUnit: one ``testsuite`` per revision and campaign, a ``testcase`` for the campaign itself
(skipped, or an error when it aborted) and one per finding; a finding that fails the run (a
violation; a deviation with ``--strict``) is a ``failure``, the others are ``skipped`` with their
grade.  SARIF: one ``run``; each rule broken is a ``reportingDescriptor`` quoting its sentence,
each finding a ``result`` (``error`` for a violation, ``warning`` for a deviation, ``note``
otherwise) located at its transcript, relative to the repository.  A finding is one cause: both
show its offending payload and the other cases of the same cause (``examples``).  A run stopped by an error
(exit status 2) is an errored JUnit test case and a failed SARIF invocation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from ._findings import CampaignStats, FuzzConfig, grouped

__all__ = ["junit_xml", "sarif"]

_SARIF_LEVEL = {"violation": "error", "deviation": "warning"}


def _fails(severity: str, strict: bool) -> bool:
    return severity == "violation" or (strict and severity == "deviation")


def _rule_line(cites: dict[str, Any]) -> str:
    return f"{cites['level']} ({cites['document']}): {cites['text']}"


def junit_xml(cfg: FuzzConfig, stats: Sequence[CampaignStats], error: str | None = None) -> str:
    """The run as JUnit XML; ``error`` (what stopped the run: the target could not start, or died
    outside a finding) is an errored test case of its own, so the run never reads as passed."""
    root = ET.Element("testsuites", name="mcp-trio fuzz")
    total = failed = errors = 0
    if error is not None:
        suite = ET.SubElement(root, "testsuite", name="run", tests="1", failures="0", errors="1", skipped="0")
        case = ET.SubElement(suite, "testcase", classname="mcp-trio-fuzz", name="target")
        ET.SubElement(case, "error", message=error, type="target-failed").text = error
        total, errors = 1, 1
    for s in stats:
        suite = ET.SubElement(root, "testsuite", name=f"{s.revision} {s.campaign}", time=f"{s.seconds:.2f}")
        classname = f"mcp-trio-fuzz.{s.revision}.{s.campaign}"
        case = ET.SubElement(suite, "testcase", classname=classname, name="campaign", time=f"{s.seconds:.2f}")
        ET.SubElement(
            case, "system-out"
        ).text = f"{s.examples} examples, {s.messages} messages, {s.sessions} sessions"
        if s.skipped:
            ET.SubElement(case, "skipped", message=s.skipped)
        elif s.aborted or s.interrupted:
            ET.SubElement(case, "error", message=s.aborted or "interrupted (Ctrl-C)")
        counts = {"tests": 1, "failures": 0, "skipped": int(bool(s.skipped)), "errors": 0}
        counts["errors"] = int(bool(not s.skipped and (s.aborted or s.interrupted)))
        for group in grouped([s]):
            counts["tests"] += 1
            case = ET.SubElement(suite, "testcase", classname=classname, name=group["key"])
            text = (
                f"{group['message']}\nrule {_rule_line(group['cites'])}\n"
                + _cases(group)
                + "".join(f"replay: mcp-trio fuzz replay {path}\n" for path in group["transcripts"])
            )
            if _fails(group["severity"], cfg.strict):
                counts["failures"] += 1
                ET.SubElement(case, "failure", message=group["message"], type=group["severity"]).text = text
            else:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=f"{group['severity']}: {group['message']}")
                ET.SubElement(case, "system-out").text = text
        suite.attrib.update({k: str(v) for k, v in counts.items()})
        total += counts["tests"]
        failed += counts["failures"]
        errors += counts["errors"]
    root.attrib.update(tests=str(total), failures=str(failed), errors=str(errors))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cases(group: dict[str, Any]) -> str:
    """A finding's offending payload and the other cases of its cause, a line each."""
    lines = [f"payload: {group['payload']}"] if group["payload"] else []
    lines += [
        f"same cause ({e['revision']} {e['campaign']}{', flaky' if e.get('flaky') else ''}): {e['payload']}"
        for e in group["examples"]
    ]
    return "".join(line + "\n" for line in lines)


def repository_root(start: Path | None = None) -> Path:
    """The repository the run is in: the nearest directory from ``start`` (the working directory)
    up that holds ``.git``; the working directory itself when there is none."""
    here = (start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), here)


def _artifact(path: str, root: Path) -> dict[str, str]:
    """A transcript's SARIF ``artifactLocation``: relative to the repository root (``SRCROOT``)
    when it is inside it, else an absolute ``file:`` URI."""
    where = Path(path).resolve()
    try:
        return {"uri": where.relative_to(root).as_posix(), "uriBaseId": "SRCROOT"}
    except ValueError:
        return {"uri": where.as_uri()}


def sarif(
    cfg: FuzzConfig, stats: Sequence[CampaignStats], error: str | None = None, root: Path | None = None
) -> dict[str, Any]:
    """The run as a SARIF 2.1.0 log.  Transcripts are located relative to the repository
    (``root``, by default :func:`repository_root`; ``SRCROOT`` in ``originalUriBaseIds``); an
    ``error`` that stopped the run is a failed ``invocation`` with its message."""
    root = root or repository_root()
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for group in grouped(stats):
        cites = group["cites"]
        rule = rules.setdefault(
            cites["rule"],
            {
                "id": cites["rule"],
                "shortDescription": {"text": f"{cites['level']}: {cites['text'][:200]}"},
                "fullDescription": {"text": _rule_line(cites)},
                "properties": {"level": cites["level"]},
            },
        )
        count = len(group["examples"])
        more = f"; {count} more case{'s' if count != 1 else ''} of the same cause" if count else ""
        result: dict[str, Any] = {
            "ruleId": rule["id"],
            "level": _SARIF_LEVEL.get(group["severity"], "note"),
            "message": {
                "text": f"{group['key']}: {group['message']} (in {', '.join(group['revisions'])}{more})"
            },
            "properties": {
                "grade": group["severity"],
                "revisions": group["revisions"],
                "campaigns": group["campaigns"],
                "failsRun": _fails(group["severity"], cfg.strict),
                "payload": group["payload"],
                "examples": group["examples"],
            },
        }
        if group["transcripts"]:
            result["locations"] = [
                {"physicalLocation": {"artifactLocation": _artifact(path, root)}}
                for path in group["transcripts"]
            ]
        results.append(result)
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mcp-trio fuzz",
                        "informationUri": "https://modelcontextprotocol.io/specification",
                        "rules": list(rules.values()),
                    }
                },
                "originalUriBaseIds": {"SRCROOT": {"uri": root.as_uri() + "/"}},
                "invocations": [
                    {
                        "executionSuccessful": error is None,
                        **(
                            {"toolExecutionNotifications": [{"message": {"text": error}, "level": "error"}]}
                            if error is not None
                            else {}
                        ),
                    }
                ],
                "properties": {"target": cfg.target.describe(), "seed": cfg.seed, "strict": cfg.strict},
                "results": results,
            }
        ],
    }


def write_ci_reports(
    cfg: FuzzConfig,
    stats: Sequence[CampaignStats],
    junit: Path | None,
    sarif_path: Path | None,
    error: str | None = None,
) -> None:
    """Write the JUnit XML and SARIF files asked for (``error``: what stopped the run, if anything)."""
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(junit_xml(cfg, stats, error))
    if sarif_path is not None:
        sarif_path.parent.mkdir(parents=True, exist_ok=True)
        sarif_path.write_text(json.dumps(sarif(cfg, stats, error), indent=1, ensure_ascii=False) + "\n")
