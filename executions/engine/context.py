from __future__ import annotations

from typing import Any

from executions.engine.state import ExecutionState


def template_context(state: ExecutionState) -> dict[str, Any]:
    """What `{{ expr }}` and `when` see (CONTRACT §2)."""
    return {
        "input": state.input,
        "nodes": {
            node_id: {"output": node.output, "status": node.status}
            for node_id, node in state.nodes.items()
        },
        "execution": {"id": state.execution_id},
    }
