"""messages.py publishes every task by name, with the queue its task object would send it
to: each name must be a task Celery registers, on that queue (a renamed or moved task
would otherwise leave its messages unconsumed)."""

from __future__ import annotations

import pytest
from celery import current_app

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
