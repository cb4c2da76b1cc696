"""Benchmark suite: the benchmark environment, and what a run records about the machine.

The virtual environment holds the pinned peers of ``requirements.txt`` and this checkout
(editable); it is created once and re-used until ``requirements.txt``, ``pyproject.toml`` or the
Python version change.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks._run_common import REQUIREMENTS, ROOT


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _install_stamp(requirements: Path = REQUIREMENTS) -> str:
    digest = hashlib.sha256()
    for path in (requirements, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def ensure_venv(venv: Path, requirements: Path = REQUIREMENTS, label: str = "benchmarks") -> Path:
    """Create or update the environment of ``requirements`` (the benchmark peers by default)
    with this checkout installed editable; returns its python."""
    python = _venv_python(venv)
    stamp_file = venv / ".mcp-trio-bench-stamp"
    stamp = _install_stamp(requirements)
    if python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return python
    print(f"{label}: installing the peers into {venv} (once) ...", flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(requirements), "-e", str(ROOT)],
        check=True,
    )
    stamp_file.write_text(stamp)
    return python


def _in_venv(venv: Path) -> bool:
    return Path(sys.prefix).resolve() == venv.resolve()


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for name in (
        "mcp-trio",
        "mcp",
        "fastmcp",
        "trio",
        "msgspec",
        "h11",
        "hypercorn",
        "anyio",
        "pydantic",
        "uvicorn",
        "starlette",
    ):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
