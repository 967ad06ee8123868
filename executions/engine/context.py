from __future__ import annotations

from typing import Any

from executions.engine.state import ExecutionState


def template_context(state: ExecutionState) -> dict[str, Any]:
    """What `{{ expr }}` and `when` see."""
    # state.seen is what fold keeps of every node it folded an event for ({"output",
    # "status"}, in the order the nodes came): templates only read it.
    return {"input": state.input, "nodes": state.seen, "execution": {"id": state.execution_id}}
