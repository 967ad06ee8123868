import pytest

from nodes.context import NodeContext
from nodes.errors import NodeCancelled, NodeError


def test_idempotency_key_defaults_to_execution_and_node():
    ctx = NodeContext(execution_id="e1", node_id="verify", attempt=2)
    assert ctx.idempotency_key == "e1:verify"
    assert NodeContext("e1", "n", 1, idempotency_key="custom").idempotency_key == "custom"


def test_heartbeat_without_callable_is_a_no_op():
    ctx = NodeContext("e", "n", 1)
    ctx.heartbeat()
    assert not ctx.cancelled


def test_failed_heartbeat_raises_and_marks_cancelled():
    beats: list[int] = []

    def beat() -> bool:
        beats.append(1)
        return len(beats) < 2

    ctx = NodeContext("e", "n", 1, _heartbeat=beat)
    ctx.heartbeat()
    with pytest.raises(NodeCancelled):
        ctx.heartbeat()
    assert ctx.cancelled
    with pytest.raises(NodeCancelled):
        ctx.heartbeat()  # stays cancelled, without asking again
    assert len(beats) == 2


def test_cancelled_from_callable_and_from_cancel():
    flag = {"cancelled": False}
    ctx = NodeContext("e", "n", 1, _is_cancelled=lambda: flag["cancelled"])
    assert not ctx.cancelled
    flag["cancelled"] = True
    assert ctx.cancelled
    with pytest.raises(NodeCancelled):
        ctx.raise_if_cancelled()

    other = NodeContext("e", "n", 1)
    other.cancel()
    assert other.cancelled


def test_node_error_as_dict():
    error = NodeError(
        "boom", type="Boom", retryable=False, details={"status_code": 500, "type": "x"}
    )
    assert error.as_dict() == {
        "type": "Boom",
        "message": "boom",
        "retryable": False,
        "status_code": 500,
    }
    assert str(error) == "boom"
    assert NodeError("plain").as_dict() == {
        "type": "NodeError",
        "message": "plain",
        "retryable": True,
    }


@pytest.mark.parametrize("call", ["heartbeat", "sleep"])
def test_a_transactional_function_cannot_heartbeat(call):
    beats: list[int] = []

    def beat() -> bool:
        beats.append(1)
        return True

    ctx = NodeContext("e", "n", 1, transactional=True, _heartbeat=beat)
    with pytest.raises(NodeError) as raised:
        ctx.heartbeat() if call == "heartbeat" else ctx.sleep(0.01)
    assert (raised.value.type, raised.value.retryable) == ("HeartbeatInTransaction", False)
    assert "WORKFLOW_TRANSACTIONAL_TIMEOUT_SECONDS" in raised.value.message
    assert beats == []  # the lease was not renewed from inside the transaction
