"""The client commands at a terminal: progress shown on one updating line of stderr, and a
server's elicitation answered by the user, field by field, following the requested schema.

Neither happens off a terminal: ``call`` then sends no progress token, and the client does not
declare the elicitation capability (so the server knows it cannot ask)."""

from __future__ import annotations

import datetime
import math
import os
import re
from collections.abc import Callable
from typing import Any, TextIO

import trio

from ._client_conn import visible

__all__ = ["ProgressLine", "TerminalForm"]

_CLEAR = "\r\x1b[K"  # back to the start of the line, and erase it


class ProgressLine:
    """``on_progress`` for a request: each notification rewrites one line of ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        amount = f"{progress:g}"
        if total is not None and total > 0:
            amount += f"/{total:g} ({min(100.0, 100 * progress / total):.0f}%)"
        line = f"progress: {amount}" + (f"  {visible(message)}" if message else "")
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        width = (columns or 80) - 1  # (a line that wraps could not be rewritten)
        self.stream.write(_CLEAR + (line if len(line) <= width else line[: width - 1] + "…"))
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        """End the line (the last progress stays on screen)."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class _Cancelled(Exception):
    """The user cancelled (end of input, or 'cancel' typed)."""


class TerminalForm:
    """An elicitation handler asking the user at the terminal: the message, then accept,
    decline or cancel, then each field of the form.  The command's ``deadline`` stops while
    the user answers (the time left is the same afterwards)."""

    def __init__(self, read: TextIO, write: TextIO, deadline: trio.CancelScope) -> None:
        self.input = read
        self.output = write
        self.deadline = deadline

    async def __call__(self, params: Any) -> dict[str, Any]:
        left = self.deadline.deadline - trio.current_time()
        self.deadline.deadline = math.inf
        try:
            return await self._ask(params)
        finally:
            self.deadline.deadline = trio.current_time() + left

    async def _ask(self, params: Any) -> dict[str, Any]:
        self._say(f"\nThe server asks: {visible(params.message, keep=chr(10))}")
        schema = params.requestedSchema if isinstance(params.requestedSchema, dict) else {}
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        try:
            while True:
                answer = (await self._line("Answer? [a]ccept / [d]ecline / [c]ancel: ")).lower()
                if answer in ("a", "accept"):
                    break
                if answer in ("d", "decline"):
                    return {"action": "decline"}
                if answer in ("c", "cancel"):
                    return {"action": "cancel"}
                self._say("  type a, d or c")
            required = schema.get("required")
            needed = set(required) if isinstance(required, list) else set()
            content: dict[str, Any] = {}
            for key, spec in properties.items():
                value = await self._field(str(key), spec if isinstance(spec, dict) else {}, key in needed)
                if value is not None:
                    content[str(key)] = value
        except _Cancelled:
            return {"action": "cancel"}
        return {"action": "accept", "content": content}

    def _say(self, text: str) -> None:
        self.output.write(text + "\n")
        self.output.flush()

    async def _line(self, prompt: str) -> str:
        self.output.write(prompt)
        self.output.flush()
        line = await trio.to_thread.run_sync(self.input.readline, abandon_on_cancel=True)
        if not line:  # end of input (Ctrl-D)
            self._say("")
            raise _Cancelled
        return line.strip()

    async def _field(self, key: str, spec: dict[str, Any], required: bool) -> Any:
        """Ask until the answer fits ``spec``: its value, or ``None`` to leave it out."""
        title = visible(str(spec.get("title") or key))
        choices = _choices(spec)
        kind = spec.get("type")
        hint = {"boolean": "yes/no", "integer": "an integer", "number": "a number"}.get(str(kind), "")
        if kind == "string" and spec.get("format") in _FORMATS:
            hint = _FORMATS[spec["format"]][0]
        if choices:
            span = f"1-{len(choices)}"
            hint = f"numbers {span}, comma-separated" if kind == "array" else span
        description = spec.get("description")
        self._say(f"{title}" + (f": {visible(str(description))}" if description else ""))
        for number, (_, label) in enumerate(choices, 1):
            self._say(f"  {number}. {visible(label)}")
        default = spec.get("default")
        shown_default = "" if default is None else f" [{visible(_shown(default, choices))}]"
        prompt = (
            f"  {key}{'' if required else ' (optional)'}{' (' + hint + ')' if hint else ''}{shown_default}: "
        )
        while True:
            text = await self._line(prompt)
            if not text:
                if default is not None:
                    return default
                if not required:
                    return None
                self._say("  an answer is required (Ctrl-D cancels)")
                continue
            try:
                return _parse(text, spec, choices)
            except ValueError as exc:
                self._say(f"  {exc}")


def _choices(spec: dict[str, Any]) -> list[tuple[Any, str]]:
    """(value, label) of each choice of an enum field (single or multiple, titled or not)."""
    source = spec.get("items") if spec.get("type") == "array" else spec
    source = source if isinstance(source, dict) else {}
    for key in ("oneOf", "anyOf"):
        options = source.get(key)
        if isinstance(options, list):
            return [
                (o.get("const"), str(o.get("title") or o.get("const")))
                for o in options
                if isinstance(o, dict) and "const" in o
            ]
    values = source.get("enum")
    if not isinstance(values, list):
        return []
    names = source.get("enumNames")
    if isinstance(names, list) and len(names) == len(values):
        return [(v, f"{n} ({v})") for v, n in zip(values, names, strict=True)]
    return [(v, str(v)) for v in values]


def _shown(default: Any, choices: list[tuple[Any, str]]) -> str:
    if isinstance(default, bool):
        return "yes" if default else "no"
    if isinstance(default, list):
        return ", ".join(str(d) for d in default)
    return str(default)


def _pick(text: str, choices: list[tuple[Any, str]]) -> Any:
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1][0]
    for value, _ in choices:
        if text == str(value):
            return value
    raise ValueError(f"choose a number from 1 to {len(choices)}")


def _parse(text: str, spec: dict[str, Any], choices: list[tuple[Any, str]]) -> Any:
    """The value ``text`` gives a field of ``spec``; ``ValueError`` says what is wrong."""
    kind = spec.get("type")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError("answer yes or no")
    if kind == "array":
        picked = [_pick(part.strip(), choices) for part in text.split(",") if part.strip()]
        low, high = spec.get("minItems"), spec.get("maxItems")
        if isinstance(low, int) and len(picked) < low:
            raise ValueError(f"choose at least {low}")
        if isinstance(high, int) and len(picked) > high:
            raise ValueError(f"choose at most {high}")
        return picked
    if choices:
        return _pick(text, choices)
    if kind in ("integer", "number"):
        try:
            number: int | float = int(text) if kind == "integer" else float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not {'an integer' if kind == 'integer' else 'a number'}") from None
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError("give a finite number")
        low, high = spec.get("minimum"), spec.get("maximum")
        if isinstance(low, int | float) and number < low:
            raise ValueError(f"the minimum is {low:g}")
        if isinstance(high, int | float) and number > high:
            raise ValueError(f"the maximum is {high:g}")
        return number
    low, high = spec.get("minLength"), spec.get("maxLength")
    if isinstance(low, int) and len(text) < low:
        raise ValueError(f"at least {low} characters")
    if isinstance(high, int) and len(text) > high:
        raise ValueError(f"at most {high} characters")
    form = spec.get("format")
    if form in _FORMATS and not _FORMATS[form][1](text):
        raise ValueError(f"{text!r} is not {_FORMATS[form][0]}")
    return text


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _is_date_time(text: str) -> bool:
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return False
    return moment.tzinfo is not None and len(text) > 10 and text[10] in "Tt "


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")

#: The string formats of an elicitation form: the hint shown, and the check.
_FORMATS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "email": ("an email address", lambda text: _EMAIL.fullmatch(text) is not None),
    "uri": ("a URI", lambda text: _URI.fullmatch(text) is not None),
    "date": ("a date, YYYY-MM-DD", _is_date),
    "date-time": ("a date and time with its offset, YYYY-MM-DDTHH:MM:SSZ", _is_date_time),
}
