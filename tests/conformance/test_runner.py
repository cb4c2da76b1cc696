"""Tests of the conformance runner itself (``tools/conformance/runner.py``).

Most tests read fixture files modelled on real harness output (0.1.16): the result directories
of a server-mode suite run against a partial fixture server, and of a client-mode ``core`` suite
run with a minimal client. The tests marked ``slow`` install Node 22 and the harness from the
npm registry (into the runner's cache, so only the first run pays) and run it; they fail, not
skip, when the registry cannot be reached.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tools.conformance import runner
from tools.conformance.runner import (
    Check,
    CommandError,
    ExpectedFailures,
    Invocation,
    RunResult,
    ScenarioResult,
)

pytestmark = pytest.mark.conformance

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
ROOT = HERE.parent.parent


def _invocation(stdout: str = "", stderr: str = "", returncode: int = 1) -> Invocation:
    return Invocation(
        argv=["conformance"],
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=False,
        duration=1.0,
    )


def _result(
    mode: str,
    invocation: Invocation,
    directory: Path,
    requested: tuple[str, ...] = (),
) -> RunResult:
    scenarios, errors = runner._collect(
        mode, invocation, directory, set(), list(requested), one_scenario=bool(requested)
    )
    return RunResult(
        mode=mode,
        harness="0.1.16",
        scenarios=scenarios,
        invocations=[invocation],
        output_dir=None,
        duration=1.0,
        errors=errors,
        whole_suite=not requested,
    )


def fixture_run(mode: str) -> RunResult:
    """The fixture suite run of ``mode`` as the runner would report it."""
    invocation = _invocation(
        (FIXTURES / f"{mode}-run.stdout.txt").read_text(encoding="utf-8"),
        (FIXTURES / f"{mode}-run.stderr.txt").read_text(encoding="utf-8"),
    )
    return _result(mode, invocation, FIXTURES / f"{mode}-run")


# --------------------------------------------------------------------------------------------
# checks.json and the harness's output
# --------------------------------------------------------------------------------------------


def test_parse_checks_reads_status_and_message() -> None:
    [path] = (FIXTURES / "server-run").glob("server-tools-call-mixed-content-*/checks.json")
    [check] = runner.parse_checks(path)
    assert check.id == "tools-call-mixed-content"
    assert check.status == "FAILURE"
    assert check.message == (
        "Expected multiple content items; Missing image content; Missing resource content"
    )
    raw = json.loads(path.read_text())
    assert runner.parse_checks(raw) == [check]


def test_message_falls_back_to_description_on_one_line() -> None:
    check = Check.from_json({"id": "x", "name": "X", "status": "failure", "description": "a\n  b"})
    assert check.status == "FAILURE"
    assert check.message == "a b"


def test_parse_checks_refuses_non_arrays(tmp_path: Path) -> None:
    path = tmp_path / "checks.json"
    path.write_text('{"id": "x"}')
    with pytest.raises(ValueError, match="array"):
        runner.parse_checks(path)


@pytest.mark.parametrize(
    ("dirname", "mode", "name"),
    [
        ("server-server-initialize-2026-11-21T22-22-12-934Z", "server", "server-initialize"),
        ("server-ping-2026-11-21T22-22-13-074Z", "server", "ping"),
        ("server-server-sse-polling-2026-11-21T22-22-13-634Z", "server", "server-sse-polling"),
        ("initialize-2026-11-21T22-23-11-243Z", "client", "initialize"),
        ("tools_call-2026-11-21T22-23-11-245Z", "client", "tools_call"),
        ("auth/metadata-default-2026-11-21T22-23-11-245Z", "client", "auth/metadata-default"),
    ],
)
def test_scenario_names_from_result_directories(dirname: str, mode: str, name: str) -> None:
    assert runner.scenario_from_dirname(dirname, mode) == name


def test_parse_summary_lines() -> None:
    server = runner.parse_summary((FIXTURES / "server-run.stdout.txt").read_text())
    assert server["ping"] == {"ok": True, "passed": 1, "failed": 0, "warnings": 0, "skipped": False}
    assert server["completion-complete"]["ok"] is False
    client = runner.parse_summary((FIXTURES / "client-run.stdout.txt").read_text())
    assert client["sse-retry"] == {
        "ok": False,
        "passed": 1,
        "failed": 0,
        "warnings": 2,
        "skipped": False,
    }
    assert list(client) == ["initialize", "sse-retry", "auth/metadata-default"]
    skipped = runner.parse_summary(
        "\x1b[32m- tasks-lifecycle: skipped\x1b[0m\n"
        "SKIPPED: scenario 'caching' is not applicable at spec version 2025-11-25 (...).\n"
    )
    assert skipped["tasks-lifecycle"]["skipped"] is True
    assert skipped["caching"]["skipped"] is True


def test_server_suite_run_is_reported_per_scenario() -> None:
    result = fixture_run("server")
    assert [s.name for s in result.scenarios] == [
        "server-initialize",
        "ping",
        "completion-complete",
        "tools-call-image",
        "tools-call-mixed-content",
        "server-sse-polling",
        "dns-rebinding-protection",
    ]
    lines = result.report().splitlines()
    assert lines[0] == "PASS server-initialize  (1 check, 0 warnings)"
    assert lines[1] == "PASS ping  (1 check, 0 warnings)"
    assert lines[2].startswith(
        "FAIL completion-complete: harness: Failed to run scenario completion-complete: "
        "Error: connect ECONNREFUSED 127.0.0.1:18765"
    )
    assert lines[3] == "FAIL tools-call-image: tools-call-image: No image content found"
    assert lines[5] == "FAIL server-sse-polling: incoming-sse-event: Tool call failed"
    assert lines[6] == "PASS dns-rebinding-protection  (2 checks, 0 warnings)"
    assert lines[-1] == "3 passed, 4 failed"
    assert not result.ok

    polling = result.scenario("server-sse-polling")
    assert polling.counts == {"SUCCESS": 0, "FAILURE": 1, "WARNING": 2, "INFO": 4, "SKIPPED": 0}
    assert [c.id for c in polling.warnings] == [
        "server-sse-priming-event",
        "server-sse-retry-field",
    ]
    assert polling.result_dir is not None and polling.result_dir.name.startswith("server-server-sse")


def test_server_verdicts_agree_with_the_harness_summary() -> None:
    result = fixture_run("server")
    summary = runner.parse_summary((FIXTURES / "server-run.stdout.txt").read_text())
    for scenario in result.scenarios:
        assert summary[scenario.name]["ok"] == (scenario.outcome == "PASS"), scenario.name
        if scenario.checks:
            assert summary[scenario.name]["passed"] == scenario.counts["SUCCESS"]
            assert summary[scenario.name]["failed"] == scenario.counts["FAILURE"]


def test_client_suite_run_is_reported_per_scenario() -> None:
    result = fixture_run("client")
    lines = result.report().splitlines()
    assert lines == [
        "PASS initialize  (1 check, 0 warnings)",
        "FAIL sse-retry: client-sse-retry-timing: WARNING: Could not measure timing - tool stream "
        "close time or GET reconnection time not recorded  (+1 more)",
        "FAIL auth/metadata-default: prm-pathbased-requested: Expected Check Missing: "
        "prm-pathbased-requested  (+4 more)",
        "1 passed, 2 failed",
    ]
    auth = result.scenario("auth/metadata-default")
    assert auth.client_stderr is not None and "MCPError" in auth.client_stderr
    assert result.scenario("initialize").client_stdout == "scenario=initialize tools=[]\n"
    summary = runner.parse_summary((FIXTURES / "client-run.stdout.txt").read_text())
    for scenario in result.scenarios:
        assert summary[scenario.name]["ok"] == (scenario.outcome == "PASS"), scenario.name
    verbose = result.report(verbose=True)
    assert "    client-sse-last-event-id: WARNING: Client did not send Last-Event-ID" in verbose
    assert "    client stderr: mcp.shared.exceptions.MCPError" in verbose


def test_warnings_pass_in_server_mode_and_fail_in_client_mode() -> None:
    checks = [
        Check(id="a", name="A", status="SUCCESS"),
        Check(id="b", name="B", status="WARNING", error_message="late by 300 ms"),
    ]
    server = ScenarioResult(name="s", mode="server", checks=list(checks))
    client = ScenarioResult(name="c", mode="client", checks=list(checks))
    assert server.outcome == "PASS"
    assert server.line() == "PASS s  (1 check, 1 warning)"
    assert client.outcome == "FAIL"
    assert client.line() == "FAIL c: b: WARNING: late by 300 ms"


def _copy_only(source: Path, names: list[str], destination: Path) -> Path:
    for name in names:
        [found] = source.glob(f"{name}-2026-*")
        shutil.copytree(found, destination / found.relative_to(source))
    return destination


def test_client_exit_status_and_timeout_fail_a_single_scenario(tmp_path: Path) -> None:
    directory = _copy_only(FIXTURES / "client-run", ["initialize"], tmp_path)
    exited = _result(
        "client",
        _invocation(stderr="Starting scenario: initialize\n\nClient exited with code 3\n"),
        directory,
        ("initialize",),
    )
    assert exited.report().splitlines() == [
        "FAIL initialize: harness: client exited with code 3",
        "0 passed, 1 failed",
    ]
    timed_out = _result(
        "client",
        _invocation(stderr="Client exited with code 1\n\nClient timed out after 2000ms\n"),
        directory,
        ("initialize",),
    )
    assert timed_out.scenarios[0].problems == ["client timed out after 2000 ms"]
    # A client allowed to fail (the harness exits 0) passes on its checks.
    allowed = _result(
        "client",
        _invocation(stderr="Client exited with code 1\n", returncode=0),
        directory,
        ("initialize",),
    )
    assert allowed.ok


def test_harness_errors_without_results(tmp_path: Path) -> None:
    unknown = _result(
        "server",
        _invocation(
            stderr="Validation error:\n  scenario: Unknown scenario 'nope'\n\n"
            "Available server scenarios:\n  - ping\n  - tools-call-error\n"
        ),
        tmp_path,
        ("nope",),
    )
    [line, last] = unknown.report().splitlines()
    assert line.startswith("FAIL nope: harness: the harness exited 1 without results for it:")
    assert "Unknown scenario 'nope'" in line and "tools-call-error" not in line
    assert last == "0 passed, 1 failed"

    bogus = _result("server", _invocation(stderr="Unknown suite: bogus\n"), tmp_path)
    assert bogus.scenarios == []
    assert bogus.errors and "Unknown suite: bogus" in bogus.errors[0]
    assert not bogus.ok
    assert bogus.report().splitlines()[-1] == "0 passed, 0 failed"


def test_suite_run_that_stops_early_is_an_error() -> None:
    stdout = (FIXTURES / "server-run.stdout.txt").read_text().split("=== SUMMARY ===")[0]
    invocation = _invocation(stdout, "TypeError: boom\n")
    result = _result("server", invocation, FIXTURES / "server-run")
    assert len(result.scenarios) == 7
    assert result.errors == ["the harness stopped (exit 1) before finishing the suite: TypeError: boom"]
    assert result.report().splitlines()[-2].startswith("ERROR the harness stopped")


def test_runner_timeout_marks_the_scenario_in_progress(tmp_path: Path) -> None:
    invocation = _invocation(stdout="=== Running scenario: server-initialize ===\n", returncode=-15)
    invocation.timed_out = True
    result = _result("server", invocation, tmp_path)
    assert [s.line() for s in result.scenarios] == [
        "FAIL server-initialize: harness: stopped by the runner's timeout during this scenario"
    ]
    assert result.errors and not result.ok


def test_only_new_result_directories_are_read(tmp_path: Path) -> None:
    directory = _copy_only(
        FIXTURES / "server-run", ["server-ping", "server-dns-rebinding-protection"], tmp_path
    )
    old = {p.resolve() for p in directory.glob("server-ping-*/checks.json")}
    parsed = runner.parse_output_dir(directory, "server", ignore=old)
    assert list(parsed) == ["dns-rebinding-protection"]


# --------------------------------------------------------------------------------------------
# Expected failures
# --------------------------------------------------------------------------------------------


def test_expected_failures_files() -> None:
    yml = runner.load_expected_failures(FIXTURES / "expected-failures.yml")
    assert yml == ExpectedFailures(
        server=frozenset({"tools-call-image", "tools-call-mixed-content", "dns-rebinding-protection"}),
        client=frozenset({"auth/metadata-default"}),
    )
    txt = runner.load_expected_failures(FIXTURES / "expected-failures.txt")
    assert txt.server == txt.client == {"tools-call-image", "sse-retry", "server-sse-polling"}


@pytest.mark.parametrize(
    ("text", "server", "client"),
    [
        ("", set(), set()),
        ("server: []\nclient: [a, 'b']\n", set(), {"a", "b"}),
        ("server:\n- a\n- b\n", {"a", "b"}, set()),
        ("x\nserver:\n  - a  # why\nclient:\n  - c\n", {"x", "a"}, {"x", "c"}),
    ],
)
def test_expected_failures_forms(text: str, server: set[str], client: set[str]) -> None:
    parsed = runner.parse_expected_failures(text)
    assert (parsed.server, parsed.client) == (server, client)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("servers:\n  - a\n", "unknown section"),
        ("two words\n", "not a scenario name"),
        ("server:\n  a\n", "expected '- name'"),
        ("server: a\n", "expected a list"),
    ],
)
def test_expected_failures_errors(text: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        runner.parse_expected_failures(text, source="f.yml")


def test_expected_failures_are_reported_but_not_counted() -> None:
    result = fixture_run("server")
    runner.apply_expected_failures(result, runner.load_expected_failures(FIXTURES / "expected-failures.yml"))
    report = result.report().splitlines()
    assert "XFAIL tools-call-image: tools-call-image: No image content found  (expected failure)" in report
    assert (
        "XPASS dns-rebinding-protection  (2 checks, 0 warnings; "
        "listed as an expected failure, remove it)" in report
    )
    assert report[-1] == "2 passed, 2 failed, 2 expected failures, 1 unexpectedly passed"
    assert not result.ok

    result = fixture_run("server")
    gaps = [
        "completion-complete",
        "tools-call-image",
        "tools-call-mixed-content",
        "server-sse-polling",
    ]
    runner.apply_expected_failures(result, [*gaps, "no-such-scenario"])
    assert result.ok
    report = result.report().splitlines()
    assert report[-1] == "3 passed, 0 failed, 4 expected failures"
    assert report[-2] == "NOTE expected-failures entries that match no scenario of this run: no-such-scenario"


def test_cli_prints_one_line_per_scenario_and_sets_the_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def fake_run_server(url: str, **options: object) -> RunResult:
        assert url == "http://127.0.0.1:1/mcp"
        result = fixture_run("server")
        runner.apply_expected_failures(result, options["expected_failures"])  # type: ignore[arg-type]
        return result

    monkeypatch.setattr(runner, "run_server", fake_run_server)
    assert runner.main(["server", "--url", "http://127.0.0.1:1/mcp"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 8 and out[-1] == "3 passed, 4 failed"

    baseline = tmp_path / "expected.txt"
    baseline.write_text(
        "completion-complete\ntools-call-image\ntools-call-mixed-content\nserver-sse-polling\n"
    )
    json_file = tmp_path / "result.json"
    code = runner.main(
        [
            "server",
            "--url",
            "http://127.0.0.1:1/mcp",
            "--expected-failures",
            str(baseline),
            "--json",
            str(json_file),
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.splitlines()[-1] == "3 passed, 0 failed, 4 expected failures"
    written = json.loads(json_file.read_text())
    assert written["ok"] is True and len(written["scenarios"]) == 7


# --------------------------------------------------------------------------------------------
# The client command
# --------------------------------------------------------------------------------------------


def test_client_command_is_joined_for_the_harness() -> None:
    assert runner.build_client_command(["/usr/bin/python3", "examples/client.py", "--x=1"]) == (
        "/usr/bin/python3 examples/client.py --x=1"
    )
    # The harness hands the line to a shell: metacharacters are quoted, without spaces.
    assert runner.build_client_command(["prog", "$HOME", "a;b"]) == "prog '$HOME' 'a;b'"


@pytest.mark.parametrize(
    ("command", "match"),
    [
        (["python", "my client.py"], "contains whitespace"),
        (["python", "a\tb"], "contains whitespace"),
        (["python", ""], "empty argument"),
        ([], "empty"),
        ("python client.py", "list of arguments"),
    ],
)
def test_client_commands_the_harness_would_mangle_are_refused(command: object, match: str) -> None:
    with pytest.raises(CommandError, match=match):
        runner.build_client_command(command)  # type: ignore[arg-type]


def test_refused_command_installs_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_install(*args: object, **kwargs: object) -> None:
        raise AssertionError("install must not be reached")

    monkeypatch.setattr(runner, "install", no_install)
    with pytest.raises(CommandError):
        runner.run_client(["python", "my client.py"], scenario="initialize")
    code = runner.main(["client", "--command", "python 'my client.py'", "--scenario", "initialize"])
    assert code == 2
    assert "contains whitespace" in capsys.readouterr().err


def test_missing_npm_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(runner.NODE_ENV, raising=False)
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    monkeypatch.setattr(runner.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(runner.sys, "platform", "linux")
    with pytest.raises(runner.InstallError, match="npm was not found on PATH"):
        runner.install(cache_dir=tmp_path)


@pytest.mark.slow
def test_unreachable_registry_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        registry = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    monkeypatch.setenv("npm_config_registry", registry)
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    with pytest.raises(runner.InstallError, match=f"could not reach {re.escape(registry)}"):
        runner.install(cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "harness-0.1.16-sdk-1.32.2").exists()


def test_parse_list_output() -> None:
    infos = runner.parse_list_output((FIXTURES / "list-0.1.16.txt").read_text())
    server = [i for i in infos if i.mode == "server"]
    client = [i for i in infos if i.mode == "client"]
    assert len(server) == 32 and len(client) == 26
    assert server[0] == runner.ScenarioInfo("server-initialize", "server", ("2025-06-18", "2025-11-25"))
    assert "auth/metadata-default" in {i.name for i in client}


# --------------------------------------------------------------------------------------------
# Real runs (npm registry needed the first time; the cache makes later runs fast)
# --------------------------------------------------------------------------------------------


def _cli(*args: str, timeout: float = 170.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.conformance.runner", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def installation() -> runner.Installation:
    try:
        return runner.install()
    except runner.InstallError as exc:
        pytest.fail(f"could not install the conformance harness: {exc}", pytrace=False)


@pytest.mark.slow
def test_install_and_list_through_the_cli() -> None:
    installed = _cli("install")
    if installed.returncode != 0:
        pytest.fail(
            "`python -m tools.conformance.runner install` failed (is the npm registry "
            f"reachable?):\n{installed.stderr}{installed.stdout}",
            pytrace=False,
        )
    node = re.search(r"^node (\S+) \((?:PATH|cache|\$\w+)\): (.+)$", installed.stdout, re.MULTILINE)
    assert node is not None, installed.stdout
    version = subprocess.run([node.group(2), "--version"], capture_output=True, text=True, check=True)
    assert int(version.stdout.strip().lstrip("v").split(".")[0]) >= 22

    inst = runner.install()
    harness = subprocess.run(
        [str(inst.node), str(inst.harness_entry), "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert harness.stdout.strip() == runner.DEFAULT_HARNESS
    assert inst.sdk_version == runner.HARNESSES[runner.DEFAULT_HARNESS].sdk_version

    listed = _cli("list", "--server", timeout=60)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if not line.endswith(" scenarios")]
    assert len(names) >= 32
    assert {"server-initialize", "tools-list", "dns-rebinding-protection"} <= set(names)
    assert listed.stdout.splitlines()[-1] == f"{len(names)} scenarios"


PROBE = r"""
import net from 'node:net';
import http from 'node:http';
const out = {};
for (const [name, start] of Object.entries({
  'listen(0)': (s) => s.listen(0),
  'listen()': (s) => s.listen(),
  'listen(cb)': (s) => s.listen(() => {}),
  'listen({port: 0})': (s) => s.listen({ port: 0 }),
  "listen(0, '::')": (s) => s.listen(0, '::'),
  "listen(0, '127.0.0.1')": (s) => s.listen(0, '127.0.0.1'),
})) {
  for (const server of [net.createServer(), http.createServer()]) {
    start(server);
    const early = server.address();
    if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
    out[`${server instanceof http.Server ? 'http' : 'net'} ${name}`] = {
      early: early && early.port > 0 ? early.address : null,
      bound: server.address().address,
    };
    server.close();
  }
}
console.log(JSON.stringify(out));
"""


@pytest.mark.slow
def test_preload_binds_loopback_synchronously(installation: runner.Installation) -> None:
    probe = subprocess.run(
        installation.node_argv("--input-type=module", "-e", PROBE),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=installation.environ(),
    )
    seen = json.loads(probe.stdout)
    for name, where in seen.items():
        assert where["bound"] == "127.0.0.1", name
        # Without a host the port is known as soon as listen() returns (the harness relies
        # on that); with a host Node binds after a DNS lookup, as it does without the preload.
        if "'" not in name:
            assert where["early"] == "127.0.0.1", name


CLIENT = r"""
import json, os, sys, urllib.request

url = sys.argv[-1]
port = int(url.split(":")[2].split("/")[0])

def listeners(table):
    try:
        lines = open(table).read().splitlines()[1:]
    except OSError:
        return None
    found = []
    for line in lines:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.append(address)
    return found

print(json.dumps({"scenario": os.environ.get("MCP_CONFORMANCE_SCENARIO"),
                  "tcp": listeners("/proc/net/tcp"), "tcp6": listeners("/proc/net/tcp6")}))
body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "stdlib-probe", "version": "1.0"}}}
request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
    "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
with urllib.request.urlopen(request, timeout=10) as response:
    assert response.status == 200, response.status
"""


@pytest.mark.slow
def test_client_mode_end_to_end(installation: runner.Installation, tmp_path: Path) -> None:
    client = tmp_path / "client.py"
    client.write_text(CLIENT)
    if any(ch.isspace() for ch in f"{sys.executable}{client}"):
        pytest.fail(f"paths with spaces cannot go through the harness: {sys.executable} {client}")
    result = runner.run_client(
        [sys.executable, str(client)],
        scenario="initialize",
        output_dir=tmp_path / "out",
        client_timeout=20,
    )
    assert result.ok, result.report(verbose=True)
    assert result.report().splitlines() == [
        "PASS initialize  (1 check, 0 warnings)",
        "1 passed, 0 failed",
    ]
    seen = json.loads(result.scenario("initialize").client_stdout or "{}")
    assert seen["scenario"] == "initialize"
    if seen["tcp"] is not None:  # Linux: the mock server listens on 127.0.0.1 only
        assert seen["tcp"] == ["0100007F"]
        assert seen["tcp6"] in ([], None)


@pytest.mark.slow
def test_server_mode_end_to_end_against_a_closed_port(installation: runner.Installation) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = runner.run_server(f"http://127.0.0.1:{port}/mcp", scenario="ping", timeout=60)
    [line, last] = result.report().splitlines()
    assert line.startswith("FAIL ping: ping: Failed:"), line
    assert last == "0 passed, 1 failed"
    assert result.invocations[0].returncode == 1
    assert result.output_dir is None  # a temporary directory, already removed
