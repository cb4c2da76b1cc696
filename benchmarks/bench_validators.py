"""JSON Schema validators side by side: jsonschema-rs (what mcp-trio uses) and jsonschema.

Run from the project root::

    python benchmarks/bench_validators.py            # a table of microseconds per operation
    python benchmarks/bench_validators.py --quick --json

mcp-trio checks the arguments of tools declared with ``input_schema=`` (server) and a tool's
``structuredContent`` against its ``outputSchema`` (client), each schema compiled once.  This
measures, for a typical input schema and a nested output schema: compiling, checking a valid
value, and finding the first error of an invalid one (the server reports only the first).
Both validators are in the ``test`` extra.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

import jsonschema
import jsonschema_rs

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "count": {"type": "integer", "minimum": 1},
        "mode": {"enum": ["pickup", "delivery"]},
        "notes": {"type": "string"},
    },
    "required": ["name", "count"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
            "required": ["name"],
        },
        "score": {"type": "number"},
        "done": {"type": "boolean"},
    },
    "required": ["id", "title", "owner"],
}
CASES: dict[str, tuple[dict[str, Any], Any, Any]] = {
    "tool input": (
        INPUT_SCHEMA,
        {"name": "tea", "count": 2, "mode": "pickup"},
        {"name": "tea", "count": 0, "extra": 1},
    ),
    "nested output": (
        OUTPUT_SCHEMA,
        {"id": 1, "title": "t", "tags": ["a", "b"], "owner": {"name": "Ada"}, "score": 0.5, "done": True},
        {"id": "1", "title": "t", "tags": ["a", 2], "owner": {}},
    ),
}


def _first_error_rs(validator: Any, value: Any) -> Any:
    return next(iter(validator.iter_errors(value)), None)


def _first_error_py(validator: Any, value: Any) -> Any:
    return next(iter(validator.iter_errors(value)), None)


def _compile_py(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _best_us(fn: Callable[[], Any], repeat: int, target: float) -> float:
    number = 1
    while timeit.timeit(fn, number=number) < target:
        number *= 2
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(repeat: int = 5, target: float = 0.02) -> list[dict[str, Any]]:
    rows = []
    for name, (schema, valid, invalid) in CASES.items():
        fast, slow = jsonschema_rs.validator_for(schema), _compile_py(schema)
        # Both must agree before their speed means anything.
        assert fast.is_valid(valid) and slow.is_valid(valid)
        assert not fast.is_valid(invalid) and not slow.is_valid(invalid)
        ops: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "compile": (partial(jsonschema_rs.validator_for, schema), partial(_compile_py, schema)),
            "valid value": (partial(fast.is_valid, valid), partial(slow.is_valid, valid)),
            "first error": (partial(_first_error_rs, fast, invalid), partial(_first_error_py, slow, invalid)),
        }
        for op, (rs, py) in ops.items():
            rs_us, py_us = _best_us(rs, repeat, target), _best_us(py, repeat, target)
            rows.append(
                {
                    "schema": name,
                    "operation": op,
                    "jsonschema_rs_us": rs_us,
                    "jsonschema_us": py_us,
                    "ratio": py_us / rs_us,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter timing runs")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    rows = measure(repeat=3, target=0.005) if args.quick else measure()
    if args.json:
        print(json.dumps({"rows": rows}))
        return 0
    print(f"{'schema':<14} {'operation':<12} {'jsonschema-rs µs':>17} {'jsonschema µs':>14} {'×':>7}")
    for row in rows:
        print(
            f"{row['schema']:<14} {row['operation']:<12} {row['jsonschema_rs_us']:>17.2f} "
            f"{row['jsonschema_us']:>14.2f} {row['ratio']:>7.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
