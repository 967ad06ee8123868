"""The workflow DSL: typed, frozen objects parsed from a version's JSON definition.

Pure Python: no Django import, so the engine core can use it.
"""

from workflows.dsl.model import (
    TRIGGER_RULES,
    Definition,
    Node,
    NodeBody,
    RetryPolicy,
)
from workflows.dsl.parser import parse_definition
from workflows.dsl.problems import DefinitionError, Problem
from workflows.kinds import NAMES

#: The registered node types (workflows/kinds/): a live view, never a second list.
NODE_TYPES = NAMES

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
