"""The Prometheus text exposition format (0.0.4), read strictly, for the metrics tests."""

from __future__ import annotations

import re

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*"'
_SAMPLE = re.compile(rf"({_NAME})(?:\{{((?:{_LABEL})(?:,{_LABEL})*)\}})? (-?[0-9.eE+-]+|NaN|[+-]Inf)")
_HELP = re.compile(rf"# HELP ({_NAME}) (.*)")
_TYPE = re.compile(rf"# TYPE ({_NAME}) (counter|gauge|histogram|summary|untyped)")


def parse_exposition(text: str) -> dict[str, tuple[str, list[tuple[dict[str, str], float]]]]:
    """The Prometheus text format (0.0.4), strictly: every line a HELP, TYPE or
    sample line; HELP and TYPE once per metric, before its samples; the text
    ends with a newline.  Returns name -> (type, samples)."""
    assert text.endswith("\n")
    metrics: dict[str, tuple[str, list[tuple[dict[str, str], float]]]] = {}
    helped: set[str] = set()
    for line in text[:-1].split("\n"):
        if match := _HELP.fullmatch(line):
            assert match[1] not in helped and match[1] not in metrics, line
            helped.add(match[1])
        elif match := _TYPE.fullmatch(line):
            assert match[1] in helped and match[1] not in metrics, line
            metrics[match[1]] = (match[2], [])
        elif match := _SAMPLE.fullmatch(line):
            assert match[1] in metrics, f"a sample before its TYPE: {line}"
            labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', match[2] or ""))
            metrics[match[1]][1].append((labels, float(match[3])))
        else:
            raise AssertionError(f"not a line of the exposition format: {line!r}")
    return metrics
