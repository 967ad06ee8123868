"""Celery messages, published after commit. The broker is only a wake-up call: if a
publish fails, the sweeper finds the row that needed it and publishes again.

Every task is published by its name, with its queue and the engine's serializer (what
`apply_async` would add from the task object), so this module imports no task: the tasks
sit above it (they run services, which send messages through it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, NamedTuple

from celery import current_app
from django.db import transaction

from workflows.celery import NODES_QUEUE, ORCHESTRATOR_QUEUE, TASK_OPTIONS
from workflows.conf import engine_settings
from workflows.models import WorkflowDefinition

log = logging.getLogger(__name__)

#: Longer waits are left to the sweeper alone, so no worker holds a far-future ETA message.
MAX_COUNTDOWN_SECONDS = 600.0


def _safely(send: Callable[[], object], what: str) -> None:
    try:
        send()
    except Exception:  # the broker is down: the sweeper will republish from the database
        log.warning("could not publish %s; the sweeper will retry", what, exc_info=True)


def attempt_name(workflow: str, node_id: str, attempt: int) -> str:
    """The name Flower and `celery inspect` show for an attempt's run_task message."""
    return f"wf:{workflow}/{node_id}#{attempt}"


@lru_cache(maxsize=1024)
def workflow_name(workflow_id: int) -> str:
    """A workflow's name for attempt_name (names are slugs given at creation)."""
    return WorkflowDefinition.objects.values_list("name", flat=True).get(pk=workflow_id)


def node_queue(node_type: str) -> str:
    """The queue WORKFLOW_NODE_QUEUES gives this node type, else the `nodes` queue."""
    return engine_settings.NODE_QUEUES.get(node_type, NODES_QUEUE)


#: The tasks published here, by name (executions/tasks.py, executions/worker/runtime.py,
#: executions/schedules/tasks.py), and the queue each is published to (run_task's: its
#: node type's, node_queue). Named as Celery registers them; tests/unit checks they are.
RUN_TASK = "nodes.tasks.run_task"
FIRE_TIMER = "executions.tasks.fire_timer"
NOTIFY_PARENT = "executions.tasks.notify_parent"
ADMIT = "executions.tasks.admit"
CANCEL_EXECUTION = "executions.tasks.cancel_execution"
LOOK_INBOX = "executions.tasks.look_inbox"
RELEASE_SCHEDULE = "executions.schedules.tasks.release_schedule"
QUEUES = {
    FIRE_TIMER: ORCHESTRATOR_QUEUE,
    NOTIFY_PARENT: ORCHESTRATOR_QUEUE,
    ADMIT: ORCHESTRATOR_QUEUE,
    CANCEL_EXECUTION: ORCHESTRATOR_QUEUE,
    LOOK_INBOX: ORCHESTRATOR_QUEUE,
    RELEASE_SCHEDULE: ORCHESTRATOR_QUEUE,
}


#: Takes a message (the task's name, its arguments, its countdown in seconds) instead of
#: the broker.
Sink = Callable[[str, tuple[Any, ...], float], None]
#: Set while workflows.testing drives executions in this process: every message goes to it,
#: none to the broker.
_sink: Sink | None = None


@contextmanager
def diverted(sink: Sink) -> Iterator[None]:
    """Every message published inside the block goes to `sink` instead of the broker."""
    global _sink
    before, _sink = _sink, sink
    try:
        yield
    finally:
        _sink = before


def send(name: str, args: tuple[Any, ...], *, queue: str | None = None, **options: Any) -> Any:
    """Publish task `name` as its own apply_async would: to its queue, in JSON, asking for
    no result (send_task would otherwise have the publisher subscribe to each message's
    result on a host's result backend, a subscription no engine task ever answers)."""
    if _sink is not None:
        return _sink(name, args, float(options.get("countdown") or 0.0))
    queue = queue or QUEUES[name]
    serializer, ignore_result = TASK_OPTIONS["serializer"], TASK_OPTIONS["ignore_result"]
    return current_app.send_task(
        name,
        args=args,
        queue=queue,
        serializer=serializer,
        ignore_result=ignore_result,
        **options,
    )


def broker_priority(priority: int) -> int:
    """An execution's priority (0 to 9, 9 first) as the message priority of kombu's Redis
    transport, which serves its LOWER numbers first (0 to 9, one list per level with the
    settings of workflows.celery.recommended_settings). The embedded file broker has no
    priorities and ignores it."""
    return 9 - max(0, min(9, priority))


class AttemptMessage(NamedTuple):
    """One run_task message (publish_attempt's arguments)."""

    attempt_id: int
    shadow: str | None = None
    node_type: str = ""
    priority: int = 0

    def options(self) -> dict[str, Any]:
        # By keyword, as every caller of publish_attempt passes them.
        return {"shadow": self.shadow, "node_type": self.node_type, "priority": self.priority}


def publish_attempt(
    attempt_id: int,
    shadow: str | None = None,
    node_type: str = "",
    priority: int = 0,
    *,
    producer: Any = None,
) -> None:
    """`shadow`: the readable task name (attempt_name) the message carries for monitors;
    `node_type`: routes it to the type's own queue, if WORKFLOW_NODE_QUEUES names one;
    `priority`: the execution's (Execution.priority); `producer`: one already holding a
    broker connection (publish_attempts), else one is taken from the pool for this."""
    options: dict[str, Any] = {
        "priority": broker_priority(priority),
        "queue": node_queue(node_type),
    }
    if producer is not None:
        options["producer"] = producer

    _safely(
        lambda: send(RUN_TASK, (attempt_id,), shadow=shadow, **options), f"attempt {attempt_id}"
    )


def publish_attempts(batch: Sequence[AttemptMessage]) -> None:
    """Many run_task messages (a fan-out's, a map's, a top-up's, the sweeper's) over one
    producer: its broker connection is taken from the pool once, not once per message.
    Each message is still its own publish, with its own priority, queue and name."""
    if len(batch) <= 1 or _sink is not None:
        for message in batch:
            _each(message, None)
        return
    try:
        with current_app.producer_or_acquire() as producer:
            for message in batch:
                _each(message, producer)
    except Exception:  # no connection to take: the sweeper republishes from the database
        log.warning("could not publish %d attempts; the sweeper will retry", len(batch),
                    exc_info=True)  # fmt: skip


def _each(message: AttemptMessage, producer: Any) -> None:
    """One send of a batch, on its own: one that fails leaves the others going out."""
    options = message.options()
    if producer is not None:
        options["producer"] = producer
    try:
        publish_attempt(message.attempt_id, **options)
    except Exception:
        log.warning("could not publish attempt %s; the sweeper will retry", message.attempt_id,
                    exc_info=True)  # fmt: skip


def publish_timer(timer_id: int, delay_seconds: float) -> None:
    if delay_seconds <= MAX_COUNTDOWN_SECONDS:
        countdown = max(delay_seconds, 0.0)
        _safely(lambda: send(FIRE_TIMER, (timer_id,), countdown=countdown), f"timer {timer_id}")


def publish_parent_notify(child_id: str) -> None:
    _safely(lambda: send(NOTIFY_PARENT, (child_id,)), f"notify parent of {child_id}")


def publish_schedule_release(schedule_id: str) -> None:
    _safely(lambda: send(RELEASE_SCHEDULE, (schedule_id,)), f"release schedule {schedule_id}")


def publish_admit(workflow_id: int, key: str) -> None:
    """Run admission for a concurrency key (services/admission.py): one of its executions
    ended, or one was held."""
    _safely(lambda: send(ADMIT, (workflow_id, key)), f"admit {workflow_id}:{key}")


def publish_cancel(execution_id: str) -> None:
    _safely(lambda: send(CANCEL_EXECUTION, (execution_id,)), f"cancel {execution_id}")


def publish_look(execution_id: str) -> None:
    """Look at the execution's inbox (executions/kernel/lock.py hand_on): a look was cut
    and a result still waits."""
    _safely(lambda: send(LOOK_INBOX, (execution_id,)), f"look at the inbox of {execution_id}")


class Outbox:
    """Messages decided inside a transaction, sent once it commits (never before)."""

    def __init__(self) -> None:
        self._sends: list[Callable[[], None]] = []

    def add(self, send: Callable[[], None]) -> None:
        if not self._sends:
            transaction.on_commit(self._flush)
        self._sends.append(send)

    def _flush(self) -> None:
        sends, self._sends = self._sends, []
        for send in sends:
            # Each on its own: one that raises (after commit, nothing to roll back) must
            # not keep the others from going out; the sweeper finds what needed it.
            try:
                send()
            except Exception:
                log.warning(
                    "could not send a message after commit; the sweeper will", exc_info=True
                )
