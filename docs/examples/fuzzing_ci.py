"""A fuzz campaign as CI runs it: wall time and example budgets, JUnit XML and SARIF files,
and the grade that decides the exit status (needs the `fuzz` extra)."""

import json
import sys
import tempfile
from pathlib import Path
from xml.etree import ElementTree

from mcp_trio.fuzzing import RULES, FuzzConfig, StdioTarget, run
from mcp_trio.fuzzing.runner import violations_found, write_ci_reports

config = FuzzConfig(
    target=StdioTarget([sys.executable, "first_server.py"]),
    campaigns=["valid"],
    seed=1,
    max_examples=5,  # --max-examples 5
    time_budget=60,  # --time 60: wall time; whichever budget ends first
    strict=True,  # --strict: deviations (SHOULDs) fail the run too
    max_rss_growth=50,  # --max-rss-growth 50: a note past 50 MB more resident memory
    max_fd_growth=20,  # --max-fd-growth 20: ... or 20 more open file descriptors
)
stats = run(config)
with tempfile.TemporaryDirectory() as tmp:
    junit, sarif = Path(tmp, "fuzz-junit.xml"), Path(tmp, "fuzz.sarif")
    write_ci_reports(config, stats, junit, sarif)  # --junit FILE --sarif FILE
    suites = ElementTree.parse(junit).getroot()
    log = json.loads(sarif.read_text())
print(f"junit: {len(suites)} test suite(s), {suites.get('failures')} failure(s)")
print(f"sarif: version {log['version']}, {len(log['runs'][0]['results'])} result(s)")
print(f"fails the run: {violations_found(stats, config.strict)}")
watched = stats[0].resources or {}  # RSS and fds of the server process, from /proc (Linux)
grew = [f.violation.key for f in stats[0].findings if f.violation.oracle == "resources"]
print(f"resources watched: {watched.get('watched')}, growth noted: {grew}")
rule = RULES["reply"].cite("2025-11-25")  # what a finding of a request left unanswered cites
print(f"{rule['level']} ({rule['document']}): {rule['text']}")
