from django.apps import AppConfig
from django.db.models.signals import post_migrate


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from workflows.roles import roles_on_migrate

        # The shipped roles (groups) exist after every migrate.
        post_migrate.connect(roles_on_migrate, dispatch_uid="workflows.roles")

        # Gives execution_finished's receivers their handles (executions/signals.py).
        from workflows import api  # noqa: F401
