"""Services the tests run that come from Debian packages (redis-server, nginx): found on PATH
(or in the system directories), else installed with ``apt-get`` when the tests run as root on
a system that has it, as ``tests/conformance/runner.py`` installs Node; otherwise a clear error
saying what to install.  One install at a time across test processes."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

INSTALL_TIMEOUT = 600.0
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
        install = ["apt-get", "install", "-y", "--no-install-recommends", package]
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
