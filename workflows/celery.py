"""The engine's side of Celery: its queues, its task decorator, and the Celery settings it
recommends to the project that runs it.

Every engine task carries its own options and queue, so a project's Celery app made the
standard way (`Celery(...)`, `config_from_object("django.conf:settings",
namespace="CELERY")`, `autodiscover_tasks()`) runs the engine with no setting of the
engine's: no task routes, no default queue. Workers consume `celery,orchestrator,nodes`
(plus any queue WORKFLOW_NODE_QUEUES names).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Task, shared_task
from celery.result import AsyncResult

#: Executions' steps: starts, timers, the sweeper, child notices, admission, schedules.
ORCHESTRATOR_QUEUE = "orchestrator"
#: Attempts of worker nodes (functions, HTTP calls), unless WORKFLOW_NODE_QUEUES routes a
#: node type elsewhere.
NODES_QUEUE = "nodes"
QUEUES = (ORCHESTRATOR_QUEUE, NODES_QUEUE)

#: What every engine task needs whatever the project's Celery defaults: a message is
#: acknowledged once its task has run (a worker that dies mid-task leaves it to be
#: delivered again: every task is idempotent), JSON only, and no result stored (the
#: database holds every outcome).
TASK_OPTIONS: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "ignore_result": True,
    "serializer": "json",
}


class EngineTask(Task):
    """A task that sends its messages to its own queue unless told otherwise: its queue
    is no Celery `queue` attribute (deprecated in Celery 5.7, without effect in 6) and
    no task route of the project's."""

    #: Set by engine_task.
    engine_queue: str

    def apply_async(
        self,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        task_id: str | None = None,
        producer: Any = None,
        link: Any = None,
        link_error: Any = None,
        shadow: str | None = None,
        **options: Any,
    ) -> AsyncResult[Any]:
        options.setdefault("queue", self.engine_queue)
        return super().apply_async(
            args, kwargs, task_id, producer, link, link_error, shadow, **options
        )


def engine_task(*, queue: str, **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """`shared_task` with the engine's options and its queue; `options` adds or replaces
    some (a task name kept for messages already queued under it, say)."""
    return shared_task(base=EngineTask, **{**TASK_OPTIONS, "engine_queue": queue, **options})


def recommended_settings(broker_url: str) -> dict[str, Any]:
    """The Celery settings the engine runs best with, as `app.conf` names them: what no
    task can carry for itself. A worker process reserves one message at a time, so an
    attempt that runs long holds back no other message behind it (engine tasks are
    acknowledged after they run, so `1` is one message, not one plus a prefetched one);
    on Redis, the ten message priorities are served apart (an execution's priority);
    and a worker started before its broker waits for it. Nothing here changes how the
    project's own tasks are acknowledged or stored."""
    recommended: dict[str, Any] = {
        "broker_url": broker_url,
        "broker_connection_retry_on_startup": True,
        "worker_prefetch_multiplier": 1,
    }
    if broker_url.startswith(("redis://", "rediss://", "redis+socket://")):
        # One list per priority level, 0 to 9 (kombu's default merges them into four):
        # run_task messages carry an execution's priority, and kombu's Redis transport
        # serves a queue's LOWER numbers first (executions/messages.broker_priority).
        recommended["broker_transport_options"] = {"priority_steps": list(range(10))}
    return recommended


def as_django_settings(celery_settings: dict[str, Any]) -> dict[str, Any]:
    """The same, named as a Django settings module holds them (namespace CELERY):
    `globals().update(as_django_settings(recommended_settings(url)))`."""
    return {f"CELERY_{name.upper()}": value for name, value in celery_settings.items()}
