"""Schema -> schema rules that make MCP's ``schema.json`` fit msgspec: the pipeline.

datamodel-code-generator (dcg) prints whatever the schema says.  The MCP
schema says a few things msgspec cannot decode (untagged unions of objects),
loses data on open objects, carries known defects of the TypeScript -> JSON
Schema conversion, and describes pre-2025-11-25 requests without their
JSON-RPC envelope.  Every rule is a small function that rewrites the schema
in place and returns ``True`` when it changed something: the decodability
rules are in :mod:`._rules`, the naming and field-doc rules in
:mod:`._naming`, the schema view and walkers they use in :mod:`._schema`,
the union facts in :mod:`._unions`.  This module runs them in the order of
``RULES``.  The rule letters match ``docs/codegen.md``.

The input schema is never modified; :func:`normalize` works on a deep copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from ._naming import collect_field_docs, rule_a1_flatten_inline_allof, rule_a_title_inline_objects
from ._rules import (
    rule_a0_restore_one_member_unions,
    rule_b2_open_empty_objects,
    rule_b_open_meta,
    rule_c_open_documents,
    rule_d2_number_in_type_lists,
    rule_d_json_value,
    rule_e_merge_resource_contents,
    rule_f_drop_undecodable_unions,
    rule_g_merge_elicit_params,
    rule_h0_open_task_payload,
    rule_h_open_input_responses,
    rule_j_wire_messages,
    rule_k_result_type_default,
    rule_l_envelope_defaults,
)
from ._schema import Normalized as Normalized
from ._schema import NormalizeError as NormalizeError
from ._schema import Schema
from ._schema import SchemaView as SchemaView

__all__ = ["RULES", "NormalizeError", "Normalized", "SchemaView", "normalize"]


#: The rules in the order they run (the order matters: e.g. a0 before j, j
#: before b, c before f, a last).
RULES: tuple[tuple[str, Callable[[SchemaView], bool]], ...] = (
    ("a0", rule_a0_restore_one_member_unions),
    ("j", rule_j_wire_messages),
    ("b", rule_b_open_meta),
    ("b2", rule_b2_open_empty_objects),
    ("c", rule_c_open_documents),
    ("d", rule_d_json_value),
    ("d2", rule_d2_number_in_type_lists),
    ("e", rule_e_merge_resource_contents),
    ("g", rule_g_merge_elicit_params),
    ("h", rule_h_open_input_responses),
    ("h0", rule_h0_open_task_payload),
    ("k", rule_k_result_type_default),
    ("l", rule_l_envelope_defaults),
    ("f", rule_f_drop_undecodable_unions),
    ("a1", rule_a1_flatten_inline_allof),
    ("a", rule_a_title_inline_objects),
    ("docs", collect_field_docs),
)


def normalize(schema: Schema, revision: str) -> Normalized:
    """Apply every rule to a deep copy of ``schema``."""
    ctx = SchemaView(copy.deepcopy(schema), revision)
    for letter, rule in RULES:
        if rule(ctx):
            ctx.result.applied.append(letter)
    return ctx.result
