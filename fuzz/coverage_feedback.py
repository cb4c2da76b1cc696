"""Coverage feedback measured: ``mcp-trio fuzz --coverage`` against the pinned Python SDK and
TypeScript everything servers over stdio, side by side with the same seed and budget.

Run from the repository root (the targets are installed as ``python -m fuzz.campaigns`` does)::

    python -m fuzz.coverage_feedback --time 60

For each target it measures first what recording costs the target (``tools/list`` requests a
second it answers in a burst: without the recorder, with it, and with it counting the SDK's
code only), then runs the same campaigns four times: without ``--coverage``, with ``--coverage
--no-steer`` (the code reached, not steering), with ``--coverage`` (steering), and steering by
the SDK's code only (``--coverage-include``); and prints the tables in markdown.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fuzz.campaigns import BY_ID, Installed, cache_dir, install, launched  # noqa: E402
from mcp_trio.fuzzing import coverage_feed  # noqa: E402

TARGETS = ("python-sdk-server-stdio", "everything-server-stdio")
MODES = {
    "off": [],
    "report": ["--coverage", "auto", "--no-steer"],
    "steer": ["--coverage", "auto"],
    "steer, SDK only": ["--coverage", "auto", "--coverage-include", "{include}"],
}
REVISION = "2025-11-25"


def requests_per_second(argv: list[str], env: dict[str, str], count: int) -> float:
    """``tools/list`` requests a second the target answers (``count`` of them written at once
    after the handshake; from the first written to the last answer): its own speed."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": REVISION,
            "capabilities": {},
            "clientInfo": {"name": "m", "version": "1"},
        },
    }
    proc = subprocess.Popen(
        argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        burst = b"".join(
            json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}).encode() + b"\n"
            for i in range(1, count + 1)
        )
        started = time.monotonic()
        proc.stdin.write(burst)
        proc.stdin.flush()
        answered = 0
        while answered < count:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the target stopped after {answered} answers")
            answered += b'"id"' in line
        return count / (time.monotonic() - started)
    finally:
        proc.kill()
        proc.communicate()


def package_dir(target_id: str, inst: Installed) -> str:
    """Where the implementation under test lives: the ``mcp`` package of the campaigns' virtual
    environment, or the npm packages of the TypeScript SDK (the server and the SDK)."""
    if BY_ID[target_id].mode == "stdio" and target_id.startswith("python"):
        code = "import mcp, os; print(os.path.dirname(mcp.__file__))"
        return subprocess.run(
            [str(inst.python), "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
    assert inst.npm is not None
    return str(inst.npm / "node_modules" / "@modelcontextprotocol")


def speed(argv: list[str], env: dict[str, str], count: int, include: str) -> tuple[float, float, float]:
    """Requests a second without the recorder, with it, and with it counting only ``include``:
    the best of three bursts each."""
    rates = []
    for scope in (None, [], [include]):
        if scope is None:
            rates.append(max(requests_per_second(argv, env, count) for _ in range(3)))
            continue
        feed = coverage_feed("auto", argv, scope)
        try:
            rates.append(max(requests_per_second(argv, feed.environ(env), count) for _ in range(3)))
        finally:
            feed.close()
    return rates[0], rates[1], rates[2]


def campaign_run(
    argv: list[str], env: dict[str, str], mode: str, args: argparse.Namespace, out: Path, include: str
) -> list[dict[str, Any]]:
    options = [o.format(include=include) for o in MODES[mode]]
    command = [sys.executable, "-m", "mcp_trio", "fuzz", "--stdio", shlex.join(argv), *options]
    for campaign in args.campaign:
        command += ["--campaign", campaign]
    command += ["--time", str(args.time), "--seed", str(args.seed), "--revision", REVISION, "--out", str(out)]
    subprocess.run(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads((out / "report.json").read_text())
    campaigns: list[dict[str, Any]] = report["campaigns"]
    return campaigns


def reached(coverage: dict[str, Any] | None) -> str:
    if not coverage:
        return "(not recorded)"
    if coverage["kind"] == "node":
        return f"{coverage['blocks']} blocks"
    return f"{coverage['lines']} lines, {coverage['arcs']} arcs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.coverage_feedback", description=__doc__)
    parser.add_argument("--time", type=float, default=60.0, help="seconds per campaign (default 60)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--campaign", action="append", default=None, help="default: valid, invalid")
    parser.add_argument("--only", action="append", choices=TARGETS, help="one target (repeatable)")
    parser.add_argument("--burst", type=int, default=500, help="requests of each speed probe (default 500)")
    args = parser.parse_args(argv)
    args.campaign = args.campaign or ["valid", "invalid"]
    inst: Installed = install(cache_dir(), need_python=True, need_node=True)
    started = time.monotonic()
    rows: list[str] = []
    speeds: list[str] = []
    for target_id in args.only or TARGETS:
        target = BY_ID[target_id]
        if target.package in inst.missing:
            print(f"{target_id}: not installed: {inst.missing[target.package]}", file=sys.stderr)
            continue
        env = inst.environ()
        with launched(target, inst) as options, tempfile.TemporaryDirectory() as tmp:
            command = shlex.split(options[1])
            include = package_dir(target_id, inst)
            bare, recorded, narrow = speed(command, env, args.burst, include)
            speeds.append(
                f"| {target.title} | {bare:.0f} | {recorded:.0f} ({recorded / bare:.2f}x) "
                f"| {narrow:.0f} ({narrow / bare:.2f}x) |"
            )
            for mode in MODES:
                print(f"{target_id}: {mode} ...", file=sys.stderr, flush=True)
                for c in campaign_run(command, env, mode, args, Path(tmp) / mode.replace(" ", ""), include):
                    minutes = c["seconds"] / 60 or 1.0
                    findings = [f for f in c["findings"] if f["severity"] != "flaky"]
                    rows.append(
                        f"| {target.title} | {c['campaign']} | {mode} | {c['examples']} "
                        f"| {c['examples'] / minutes:.0f} | {len(findings)} "
                        f"({', '.join(sorted({f['key'] for f in findings})) or '-'}) "
                        f"| {reached(c.get('coverage'))} |"
                    )
    print("| target | requests/s, no recorder | recording (default scope) | recording the SDK only |")
    print("|---|---|---|---|")
    print("\n".join(speeds))
    print()
    print("| target | campaign | feedback | examples | examples/min | findings | code reached |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\n(took {time.monotonic() - started:.0f} s; --time {args.time:g}, --seed {args.seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
