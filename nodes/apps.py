from importlib import import_module

from django.apps import AppConfig

from workflows.conf import engine_settings


class NodesConfig(AppConfig):
    name = "nodes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing a module runs its @workflow_function decorators.
        for module in engine_settings.FUNCTION_MODULES:
            import_module(module)
