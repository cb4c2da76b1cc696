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
    ends with a newline.  Returns name -> (type, samples); a histogram's samples are under its
    name, each labelled ``__sample__`` (``bucket``, ``sum`` or ``count``)."""
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
            name = match[1]
            labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match[2] or ""))
            if name not in metrics:  # (a histogram's _bucket, _sum and _count: under its name)
                base, _, suffix = name.rpartition("_")
                assert suffix in ("bucket", "sum", "count") and metrics.get(base, ("",))[0] == "histogram", (
                    f"a sample before its TYPE: {line}"
                )
                name, labels = base, {**labels, "__sample__": suffix}
            metrics[name][1].append((labels, float(match[3])))
        else:
            raise AssertionError(f"not a line of the exposition format: {line!r}")
    return metrics
