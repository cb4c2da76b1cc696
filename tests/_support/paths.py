"""Where things are in the repository, for the tests and their helpers."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: Programs the tests run as subprocesses (servers and clients, ours and other libraries').
PROGRAMS = TESTS / "programs"
EXAMPLES = ROOT / "examples"
EVERYTHING = EXAMPLES / "everything.py"
