"""What the engine looks like from inside the host project (tests/host/settings.py), printed
as JSON for tests/unit/test_host__joins.py: run as `python -m tests.host.probe` with
DJANGO_SETTINGS_MODULE=tests.host.settings, in a process of its own (the function registry
and Celery's current app are per process)."""

from __future__ import annotations

import inspect
import json
import os
from typing import Any

import django
from celery import Celery


def host_celery_app() -> Celery:
    """The host's Celery app, made the standard way, loaded as a worker loads it."""
    app = Celery("host")
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.autodiscover_tasks()
    app.loader.import_default_modules()
    return app


def sent(app: Celery) -> dict[str, dict[str, list[str]]]:
    """Queue -> the names of the tasks whose messages it got, for one message of each
    engine task sent the plain way (task.apply_async), then for one message from each of
    the engine's publishers (executions/messages.py)."""
    from executions import messages

    engine = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    for task in engine.values():
        arity = len(inspect.signature(task.run).parameters)
        task.apply_async(args=(0,) * arity)
    plain = received(app)
    messages.publish_attempt(1, node_type="function")
    messages.publish_timer(1, 0)
    messages.publish_parent_notify("child")
    messages.publish_admit(1, "key")
    messages.publish_cancel("execution")
    messages.publish_schedule_release("schedule")
    return {"apply_async": plain, "publishers": received(app)}


def received(app: Celery) -> dict[str, list[str]]:
    """Each queue's messages (taken off it): the names of their tasks."""
    found: dict[str, list[str]] = {}
    with app.connection_for_read() as connection:
        for queue in ("celery", "orchestrator", "nodes"):
            simple = connection.SimpleQueue(queue)
            names = found.setdefault(queue, [])
            while True:
                try:
                    message = simple.get_nowait()
                except simple.Empty:
                    break
                names.append(message.headers["task"])
                message.ack()
            simple.close()
    return {queue: sorted(names) for queue, names in found.items()}


def main() -> dict[str, Any]:
    django.setup()
    app = host_celery_app()
    from django.conf import settings

    from nodes.registry import function_names
    from workflows.conf import engine_settings

    return {
        "settings_module": os.environ["DJANGO_SETTINGS_MODULE"],
        "workflow_settings": [name for name in dir(settings) if name.startswith("WORKFLOW_")],
        "problems": engine_settings.problems(),
        "function_modules": engine_settings.FUNCTION_MODULES,
        "functions": function_names(),
        "task_queues": {
            name: getattr(task, "engine_queue", None)
            for name, task in app.tasks.items()
            if not name.startswith("celery.")
        },
        "sent": sent(app),
    }


if __name__ == "__main__":
    print(json.dumps(main()))
