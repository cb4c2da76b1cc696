"""``mcp-trio call`` at a terminal (a real pty): progress on one updating line of stderr, and
elicitation answered field by field; off a terminal, neither."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests._support.paths import ROOT

EVERYTHING = f"{sys.executable} examples/everything.py"


class Terminal:
    """``python -m mcp_trio *argv`` with stdin and stderr on a pty (stdout on a pipe): what the
    user sees, and the answers typed when the screen shows the expected question."""

    def __init__(self, *argv: str, stdin_tty: bool = True, columns: int = 0) -> None:
        self.master, slave = pty.openpty()
        if columns:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_trio", *argv],
            cwd=ROOT,
            stdin=slave if stdin_tty else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
        os.close(slave)
        self.screen = ""
        self.seen = 0  # how much of the screen the questions already matched

    def _read(self, timeout: float) -> bool:
        """Read what is there (waiting up to ``timeout``); False at the end of the output."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 4096)
        except OSError:  # EIO: the process closed the pty
            return False
        if not data:
            return False
        self.screen += data.decode(errors="replace").replace("\r\n", "\n")
        return True

    def answer(self, question: str, text: str, timeout: float = 30) -> None:
        """Wait for ``question`` on the screen, then type ``text`` and Enter."""
        deadline = time.monotonic() + timeout
        while question not in self.screen[self.seen :]:
            assert time.monotonic() < deadline and self._read(0.2), f"no {question!r} in {self.screen!r}"
        self.seen = self.screen.index(question, self.seen) + len(question)
        os.write(self.master, text.encode() + b"\n")

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """Wait for the end: (exit code, stdout); the screen is complete."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._read(0.2):
            pass
        assert self.proc.stdout is not None
        stdout = self.proc.stdout.read().decode()
        code = self.proc.wait(timeout=10)
        self.proc.stdout.close()
        os.close(self.master)
        return code, stdout


def tool_text(stdout: str) -> str:
    return str(json.loads(stdout)["content"][0]["text"])


def test_progress_is_one_updating_line_on_a_terminal() -> None:
    terminal = Terminal("call", EVERYTHING, "test_tool_with_progress", stdin_tty=False)
    code, stdout = terminal.finish()
    assert code == 0, terminal.screen
    assert tool_text(stdout) != "no progress token was given"  # a token was sent
    steps = [f"\r\x1b[Kprogress: {n}/100 ({n}%)  Completed step {n} of 100" for n in (0, 50, 100)]
    assert terminal.screen == "".join(steps) + "\n"


def test_a_progress_line_never_wraps() -> None:
    terminal = Terminal("call", EVERYTHING, "test_tool_with_progress", stdin_tty=False, columns=30)
    code, _ = terminal.finish()
    assert code == 0, terminal.screen
    lines = terminal.screen.rstrip("\n").split("\r\x1b[K")[1:]
    assert lines[1] == "progress: 50/100 (50%)  Comp…" and all(len(line) == 29 for line in lines)


def test_no_progress_token_off_a_terminal() -> None:
    command = [sys.executable, "-m", "mcp_trio", "call", EVERYTHING, "test_tool_with_progress"]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert tool_text(done.stdout) == "no progress token was given"
    assert done.stderr == ""


def test_elicitation_is_answered_field_by_field() -> None:
    terminal = Terminal("call", EVERYTHING, "test_elicitation_sep1034_defaults")
    terminal.answer("[d]ecline / [c]ancel: ", "a")
    terminal.answer("name (optional) [John Doe]: ", "")  # Enter keeps the default
    terminal.answer("age (optional) (an integer) [30]: ", "forty")
    terminal.answer("'forty' is not an integer\n  age (optional) (an integer) [30]: ", "41")
    terminal.answer("score (optional) (a number) [95.5]: ", "7.5")
    terminal.answer("  3. pending\n  status (optional) (1-3) [active]: ", "3")
    terminal.answer("verified (optional) (yes/no) [yes]: ", "no")
    code, stdout = terminal.finish()
    assert code == 0, terminal.screen
    assert "The server asks: Please review and update the form fields with defaults" in terminal.screen
    assert "User age" in terminal.screen  # the field's description
    label, content = tool_text(stdout).split("content=")
    assert label == "Elicitation completed: action=accept, "
    assert json.loads(content) == {
        "name": "John Doe", "age": 41, "score": 7.5, "status": "pending", "verified": False
    }  # fmt: skip


def test_elicitation_enums_single_and_multiple() -> None:
    terminal = Terminal("call", EVERYTHING, "test_elicitation_sep1330_enums")
    terminal.answer("[c]ancel: ", "accept")
    terminal.answer("untitledSingle (optional) (1-3): ", "option2")  # a value, not a number
    terminal.answer("titledSingle (optional) (1-3): ", "2")
    terminal.answer("legacyEnum (optional) (1-3): ", "1")
    terminal.answer("untitledMulti (optional) (numbers 1-3, comma-separated): ", "1, 3")
    terminal.answer("titledMulti (optional) (numbers 1-3, comma-separated): ", "1,2,3,1")
    terminal.answer("choose at most 3\n", "2")
    code, stdout = terminal.finish()
    assert code == 0, terminal.screen
    assert json.loads(tool_text(stdout).split("content=")[1]) == {
        "untitledSingle": "option2",
        "titledSingle": "value2",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option3"],
        "titledMulti": ["value2"],
    }


def test_elicitation_declined_and_cancelled() -> None:
    terminal = Terminal("call", EVERYTHING, "test_elicitation", "message=Who are you?")
    terminal.answer("The server asks: Who are you?\nAnswer? [a]ccept / [d]ecline / [c]ancel: ", "d")
    code, stdout = terminal.finish()
    assert code == 0 and tool_text(stdout) == "User response: action=decline, content={}"
    terminal = Terminal("call", EVERYTHING, "test_elicitation", "message=Who are you?")
    terminal.answer("[c]ancel: ", "a")
    terminal.answer("username: ", "")  # required: asked again
    terminal.answer("an answer is required (Ctrl-D cancels)\n  username: ", "\x04")  # end of input
    code, stdout = terminal.finish()
    assert code == 0 and tool_text(stdout) == "User response: action=cancel, content={}"


def test_no_elicitation_off_a_terminal() -> None:
    """stdin is not a terminal: the client does not declare elicitation, the server knows."""
    command = [sys.executable, "-m", "mcp_trio", "call", EVERYTHING, "test_elicitation", "message=hi"]
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1
    text = tool_text(done.stdout)
    assert text.startswith("Elicitation not supported or error: ") and "elicitation" in text[36:]


FORMS_SERVER = """
import json
from mcp_trio.server import Context, Server

server = Server("forms", "1")
SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "E-mail"},
        "site": {"type": "string", "format": "uri"},
        "born": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "code": {"type": "string", "minLength": 2, "maxLength": 3},
        "count": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["email", "count"],
}


@server.tool
async def ask(ctx: Context) -> str:
    result = await ctx.elicit("Your \\x1b[2Jdetails", SCHEMA)
    content = result.content if isinstance(result.content, dict) else None
    return json.dumps({"action": result.action, "content": content})
"""


def forms_server(tmp_path: Path) -> str:
    (tmp_path / "forms.py").write_text(FORMS_SERVER)
    return f"{sys.executable} -m mcp_trio serve {tmp_path / 'forms.py'}"


def test_elicitation_checks_formats_lengths_and_bounds(tmp_path: Path) -> None:
    terminal = Terminal("call", forms_server(tmp_path), "ask")
    terminal.answer("[c]ancel: ", "a")
    terminal.answer("email (an email address): ", "nope")
    terminal.answer("'nope' is not an email address\n  email (an email address): ", "a@b.org")
    terminal.answer("site (optional) (a URI): ", "")
    terminal.answer("born (optional) (a date, YYYY-MM-DD): ", "2024-13-01")
    terminal.answer("is not a date, YYYY-MM-DD\n  born (optional) (a date, YYYY-MM-DD): ", "2024-02-29")
    terminal.answer("YYYY-MM-DDTHH:MM:SSZ): ", "2024-02-29T10:00:00")  # no offset
    terminal.answer("is not a date and time with its offset, YYYY-MM-DDTHH:MM:SSZ\n", "2024-02-29T10:00:00Z")
    terminal.answer("code (optional): ", "a")
    terminal.answer("at least 2 characters\n  code (optional): ", "abcd")
    terminal.answer("at most 3 characters\n  code (optional): ", "abc")
    terminal.answer("count (an integer): ", "9")
    terminal.answer("the maximum is 5\n  count (an integer): ", "3")
    code, stdout = terminal.finish()
    assert code == 0, terminal.screen
    assert json.loads(tool_text(stdout)) == {
        "action": "accept",
        "content": {
            "email": "a@b.org",
            "born": "2024-02-29",
            "at": "2024-02-29T10:00:00Z",
            "code": "abc",
            "count": 3,
        },
    }
    assert "E-mail\n" in terminal.screen  # the field's title
    assert "The server asks: Your \\u001b[2Jdetails" in terminal.screen  # (escapes shown, not obeyed)
    assert "\x1b[2J" not in terminal.screen


def test_the_time_taken_to_answer_does_not_count_against_the_timeout(tmp_path: Path) -> None:
    terminal = Terminal("call", "--timeout", "3", forms_server(tmp_path), "ask")
    terminal.answer("[c]ancel: ", "", timeout=20)  # (an empty answer: asked again)
    time.sleep(4)
    terminal.answer("type a, d or c\n", "c")
    code, stdout = terminal.finish()
    assert code == 0, terminal.screen
    assert json.loads(tool_text(stdout)) == {"action": "cancel", "content": None}
