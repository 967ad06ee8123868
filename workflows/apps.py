from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import request_started
from django.db.models.signals import post_migrate

from workflows import logs
from workflows.conf import engine_settings


def _fresh_log_context(**_: object) -> None:
    """A request's log lines carry its own context, not what an earlier request on the same
    thread bound (workflows/logs.py)."""
    logs.clear()


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # A wrong WORKFLOW_... setting stops every process at start, not the first
        # execution that reads it.
        problems = engine_settings.problems()
        if problems:
            raise ImproperlyConfigured("; ".join(problems))

        from workflows.roles import roles_on_migrate

        # The shipped roles (groups) exist after every migrate.
        post_migrate.connect(roles_on_migrate, dispatch_uid="workflows.roles")
        request_started.connect(_fresh_log_context, dispatch_uid="workflow-log-context")

        # Gives execution_finished's receivers their handles (executions/signals.py).
        from workflows import api  # noqa: F401
