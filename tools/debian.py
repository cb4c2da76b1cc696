"""Services the tests run that come from Debian packages (redis-server, nginx): found on PATH
(or in the system directories), else installed with ``apt-get`` when the tests run as root on
a system that has it, as ``tools/conformance/runner.py`` installs Node; otherwise a clear error
saying what to install.  One install at a time across test processes.

What is installed is pinned (``PINS``: the release series the tests are run on, as apt matches
``PACKAGE=VERSION`` globs; a series keeps its security updates).  ``.ci/run`` installs them up
front with ``python3 -m tools.debian``."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

INSTALL_TIMEOUT = 600.0
#: Debian package -> the versions it is installed at (an apt version glob): Debian 12's series.
PINS = {
    "redis-server": "5:7.0.*",
    "nginx-light": "1.22.*",
}
#: What ``python3 -m tools.debian`` installs with no arguments: (command, package).
SERVICES = (("redis-server", "redis-server"), ("nginx", "nginx-light"))
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Unavailable(RuntimeError):
    """A command is missing and cannot be installed."""


def _which(command: str) -> str | None:
    return shutil.which(command) or shutil.which(command, path=SYSTEM_PATH)


def _apt_install(package: str, command: str) -> None:
    """``apt-get install -y PACKAGE`` (after ``apt-get update`` if the first try fails)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = Path(tempfile.gettempdir()) / "mcp-trio-apt-install.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if _which(command):
            return
        pinned = f"{package}={PINS[package]}" if package in PINS else package
        install = ["apt-get", "install", "-y", "--no-install-recommends", pinned]
        failed = ""
        for step in ([install], [["apt-get", "update"], install]):
            failed = ""
            for argv in step:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env, check=False
                )
                if done.returncode != 0:
                    failed = f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}"
                    break
            if not failed and _which(command):
                return
        raise Unavailable(
            f"could not install Debian's {package} package: {failed or f'no {command} after it'}"
        )


def ensure_command(command: str, package: str, what: str) -> str:
    """The path of ``command``, installing Debian's ``package`` first if it is missing;
    ``what`` says which tests need it (for the error)."""
    found = _which(command)
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise Unavailable(
            f"{what} need {command} on PATH: install it (Debian/Ubuntu: sudo apt-get install "
            f"{package}); the tests install it themselves only when they run as root on a system "
            "with apt-get"
        )
    _apt_install(package, command)
    found = _which(command)
    assert found
    return found


def main(argv: list[str] | None = None) -> int:
    """``python3 -m tools.debian [COMMAND:PACKAGE ...]``: each command found or installed (every
    service of ``SERVICES`` when none is named); 1 if one cannot be had, saying why."""
    import sys

    wanted = [tuple(arg.split(":", 1)) for arg in argv] if argv else list(SERVICES)
    failed = 0
    for command, package in wanted:
        try:
            print(f"{command}: {ensure_command(command, package, 'the slow test tiers')}")
        except Unavailable as exc:
            print(f"{command}: {exc}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
