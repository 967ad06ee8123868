"""messages.py publishes every task by name, with the queue its task object would send it
to: each name must be a task Celery registers, on that queue (a renamed or moved task
would otherwise leave its messages unconsumed)."""

from __future__ import annotations

import pytest
from celery import Celery, current_app
from celery._state import get_current_app

import executions.tasks  # noqa: F401  (registers the engine's tasks, as autodiscovery does)
from executions import messages
from workflows.celery import NODES_QUEUE, EngineTask

PUBLISHED = {**messages.QUEUES, messages.RUN_TASK: NODES_QUEUE}


@pytest.mark.parametrize(("name", "queue"), sorted(PUBLISHED.items()))
def test_each_name_published_is_a_task_on_its_queue(name: str, queue: str) -> None:
    task = current_app.tasks.get(name)
    assert isinstance(task, EngineTask), f"messages publishes {name}, no engine task"
    assert task.engine_queue == queue, f"{name}: its task sends to {task.engine_queue}"


def test_the_node_task_goes_to_its_node_type_s_queue_by_default() -> None:
    assert messages.node_queue("function") == NODES_QUEUE


def test_a_message_by_name_asks_for_no_result_as_its_task_s_apply_async_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Engine tasks ignore their results. Published by name without saying so, every
    # message would make the publisher subscribe to its result (a host's Redis result
    # backend: one pub/sub channel per message, never answered, never let go).
    app = Celery("host", broker="memory://", backend="cache+memory://", set_as_current=False)
    subscribed: list[str] = []
    monkeypatch.setattr(app.backend, "on_task_call", lambda _, task_id: subscribed.append(task_id))
    before = get_current_app()
    app.set_current()
    try:
        sent = messages.send(messages.ADMIT, (1, "key"))
    finally:
        before.set_current()
    assert sent.ignored is True
    assert subscribed == []
