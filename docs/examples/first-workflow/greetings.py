"""The function the first workflow calls: a module of its own, listed in
WORKFLOW_FUNCTION_MODULES so that the standalone server registers it at start-up."""

from nodes import NodeError, workflow_function


@workflow_function("greetings.compose")
def compose(input, ctx):
    name = str(input.get("name", "")).strip()
    if not name:
        # Another attempt would get the same input: say so, and the node fails at once.
        raise NodeError("name is empty", type="EmptyName", retryable=False)
    return {"text": f"Hello, {name}!"}
