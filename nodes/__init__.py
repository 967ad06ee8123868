"""Node types and executors. Importing this package must not import Django models."""

from nodes.context import NodeContext
from nodes.errors import NodeCancelled, NodeError
from nodes.registry import workflow_function

__all__ = ["NodeCancelled", "NodeContext", "NodeError", "workflow_function"]
