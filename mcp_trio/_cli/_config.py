"""Flags of a subcommand from the environment and a TOML config file.

:func:`layered` makes every optional flag of an :mod:`argparse` parser settable
three more ways, whatever the flag: the environment variable ``MCP_TRIO_<NAME>``
(``--max-connections`` -> ``MCP_TRIO_MAX_CONNECTIONS``), and a key of the TOML
file named by ``--config FILE`` (``max-connections`` or ``max_connections``).
The command line wins over the environment, which wins over the file, which
wins over the flag's default.  :func:`resolve` fills in what the command line
left out, once it is parsed.

Values are checked as the command line's are (the flag's type and choices);
an on/off flag (``--stateless``) takes ``1/true/yes/on`` or ``0/false/no/off``
from the environment and a boolean from the file; a repeatable flag
(``--allowed-host``) takes a comma-separated list from the environment and a
list (or one string) from the file.  Errors name the variable or key.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ConfigError", "as_argv", "env_name", "layered", "resolve"]

ENV_PREFIX = "MCP_TRIO_"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})
#: Attribute of the parser holding the layered actions' defaults.
_DEFAULTS = "_mcp_trio_defaults"


class ConfigError(Exception):
    """A bad environment variable, config file or value in one; the message is for the user."""


def env_name(action: argparse.Action) -> str:
    """``MCP_TRIO_MAX_CONNECTIONS`` for ``--max-connections``."""
    return ENV_PREFIX + action.dest.upper()


def _layerable(action: argparse.Action) -> bool:
    return (
        bool(action.option_strings)
        and action.dest not in ("help", "version", "config")
        and not isinstance(action, argparse._HelpAction | argparse._VersionAction)
    )


def layered(parser: argparse.ArgumentParser) -> None:
    """Make every optional flag of ``parser`` settable from the environment
    and ``--config FILE`` (which this adds); call it after the last
    ``add_argument``.  The parsed namespace then lacks what the command line
    did not give: :func:`resolve` fills it in."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help='read flags from this TOML file (keys: flag names, e.g. allowed-host = ["a.example"]); '
        "the environment (MCP_TRIO_<FLAG>, e.g. MCP_TRIO_MAX_CONNECTIONS) wins over it, the command "
        "line over both",
    )
    defaults: dict[str, Any] = {}
    for action in parser._actions:
        if _layerable(action):
            defaults[action.dest] = action.default
            action.default = argparse.SUPPRESS
    setattr(parser, _DEFAULTS, defaults)


def resolve(
    parser: argparse.ArgumentParser, args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> None:
    """Fill in ``args`` the flags the command line left out: from the
    environment, else the config file, else the default.

    Raises:
        ConfigError: a value cannot be read (naming the variable or key), the
            file cannot be read, or it holds a key that is no flag.
    """
    environ = os.environ if environ is None else environ
    actions = {a.dest: a for a in parser._actions if _layerable(a)}
    config_path = getattr(args, "config", None) or environ.get(ENV_PREFIX + "CONFIG") or None
    args.config = config_path
    from_file = _read_config(config_path, actions) if config_path else {}
    defaults: dict[str, Any] = getattr(parser, _DEFAULTS)
    for dest, action in actions.items():
        if hasattr(args, dest):
            continue
        name = env_name(action)
        if name in environ:
            value = _from_text(action, environ[name], name, defaults[dest])
        elif dest in from_file:
            where = f"{config_path}: {dest.replace('_', '-')}"
            value = _from_toml(action, from_file[dest], where, defaults[dest])
        else:
            value = defaults[dest]
        setattr(args, dest, value)


def as_argv(
    parser: argparse.ArgumentParser, args: argparse.Namespace, leave_out: Sequence[str] = ()
) -> list[str]:
    """The flags of ``args`` (resolved) that differ from their defaults, as a
    command line that gives them back (flags named in ``leave_out``, by their
    ``dest``, left out): what a process started with the same settings takes."""
    defaults: dict[str, Any] = getattr(parser, _DEFAULTS)
    argv: list[str] = []
    for action in parser._actions:
        if not _layerable(action) or action.dest in leave_out:
            continue
        value = getattr(args, action.dest)
        if value == defaults[action.dest]:
            continue
        flag = action.option_strings[-1]
        if action.nargs == 0:
            argv.append(flag)
        elif isinstance(action, argparse._AppendAction):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def _read_config(path: str, actions: Mapping[str, argparse.Action]) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            table = tomllib.load(file)
    except OSError as exc:
        raise ConfigError(f"--config: cannot read {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config: {path} is not valid TOML: {exc}") from None
    found: dict[str, Any] = {}
    for key, value in table.items():
        dest = key.replace("-", "_")
        if dest not in actions:
            known = ", ".join(sorted(d.replace("_", "-") for d in actions))
            raise ConfigError(f"{path}: unknown key {key!r} (the flags are: {known})")
        found[dest] = value
    return found


def _type_name(action: argparse.Action) -> str:
    name = getattr(action.type, "__name__", "str")
    for kind in ("int", "float", "count"):
        if kind in name:
            return "int" if kind == "count" else kind
    return name


def _convert(action: argparse.Action, text: str, where: str) -> Any:
    """One value, as the command line would take it."""
    value: Any = text
    if callable(action.type):
        try:
            value = action.type(text)
        except argparse.ArgumentTypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: invalid {_type_name(action)} value {text!r}") from None
    if action.choices is not None and value not in action.choices:
        choices = ", ".join(repr(c) for c in action.choices)
        raise ConfigError(f"{where}: invalid choice {text!r} (choose from {choices})")
    return value


def _from_text(action: argparse.Action, text: str, where: str, default: Any) -> Any:
    """An environment variable's value for ``action``."""
    if action.nargs == 0:  # an on/off flag
        word = text.strip().lower()
        if word not in _TRUE | _FALSE:
            raise ConfigError(
                f"{where}: invalid boolean value {text!r} (use 1/0, true/false, yes/no, on/off)"
            )
        return action.const if word in _TRUE else default
    if isinstance(action, argparse._AppendAction):
        return [_convert(action, part.strip(), where) for part in text.split(",") if part.strip()]
    return _convert(action, text, where)


def _from_toml(action: argparse.Action, value: Any, where: str, default: Any) -> Any:
    """A config file's value for ``action``."""
    if action.nargs == 0:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: invalid boolean value {value!r} (use true or false)")
        return action.const if value else default
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value]
        return [_convert(action, _scalar(item, where), where) for item in items]
    return _convert(action, _scalar(value, where), where)


def _scalar(value: Any, where: str) -> str:
    """A TOML string, integer or float as the command line's text."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"{where}: invalid value {value!r} (a string or a number)")
    return str(value)
