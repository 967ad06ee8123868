"""The workflow DSL: typed, frozen objects parsed from a version's JSON definition.

Pure Python: no Django import, so the engine core can use it.
"""

from workflows.dsl.model import (
    NODE_TYPES,
    TRIGGER_RULES,
    Definition,
    Node,
    NodeBody,
    RetryPolicy,
)
from workflows.dsl.parser import parse_definition
from workflows.dsl.problems import DefinitionError, Problem

__all__ = [
    "NODE_TYPES",
    "TRIGGER_RULES",
    "Definition",
    "DefinitionError",
    "Node",
    "NodeBody",
    "Problem",
    "RetryPolicy",
    "parse_definition",
]
