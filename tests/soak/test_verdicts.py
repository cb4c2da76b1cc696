"""The soak test's verdicts judge the server, not the machine: an attack that fell short while the
machine kept the attackers from the CPU is left out, the legitimate clients' errors never are.
(Runs in the fast tier: it builds reports by hand, no server.)"""

from __future__ import annotations

from typing import Any

from ._report import STARVED, Report
from ._tally import Attack, Stats


async def _never(port: int, stats: Stats) -> None:
    raise AssertionError("not run in these tests")


def _attack(name: str) -> Attack:
    return Attack(name, "sends requests", _never, lambda s: s.counts["sent"] >= 10, lambda s: None)


def _report(
    *, sent: int, waited: float, legit_errors: int = 0, server: tuple[float, float] = (4, 1)
) -> Report:
    attack = _attack("flood")
    stats = Stats("flood", "127.0.0.3")
    stats.add("sent", sent)
    legit: dict[str, Any] = {"errors": 0, "warmup_errors": 0, "p99_ms": 4.0}
    report = Report("h11", [attack], stats={"flood": stats}, unloaded=legit)
    report.loaded = {**legit, "errors": legit_errors, "requests": 1000}
    report.attackers_wall, report.attackers_waited = 13.0, waited
    report.server_cpu, report.server_waited = server
    return report


def test_an_attack_that_did_not_run_on_a_quiet_machine_fails_the_run() -> None:
    report = _report(sent=3, waited=0.5)
    assert not report.machine_too_busy() and report.left_out() == []
    assert report.service_problems() == ["attack flood did not really run: sent 3"]


def test_an_attack_that_did_not_run_on_a_busy_machine_is_left_out() -> None:
    report = _report(sent=3, waited=STARVED * 13.0 + 1)
    assert report.machine_too_busy() and report.left_out() == ["flood"]
    assert report.service_problems() == []
    assert "VERDICT LEFT OUT" in report.render([])


def test_an_attack_that_met_its_bound_on_a_busy_machine_is_judged_as_usual() -> None:
    report = _report(sent=50, waited=12.0)
    assert report.machine_too_busy() and report.left_out() == [] and report.service_problems() == []


def test_legitimate_errors_fail_the_run_however_busy_the_machine() -> None:
    report = _report(sent=3, waited=12.0, legit_errors=2)
    assert report.left_out() == ["flood"]
    (problem,) = report.service_problems()
    assert problem.startswith("legitimate clients got 2 errors under attack (bound: 0)")


def test_the_server_counts_as_starved_past_half_its_runnable_time_waiting() -> None:
    assert not _report(sent=50, waited=0, server=(4.0, 1.0)).server_starved()
    assert not _report(sent=50, waited=0, server=(3.0, 2.9)).server_starved()
    assert _report(sent=50, waited=0, server=(1.0, 7.0)).server_starved()
