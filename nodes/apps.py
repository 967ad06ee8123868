from importlib import import_module

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules

from workflows.conf import engine_settings

#: The module every installed app may hold its workflow functions in, found at start-up as
#: Celery finds `tasks`.
FUNCTIONS_MODULE = "workflow_functions"


class NodesConfig(AppConfig):
    name = "nodes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing a module runs its @workflow_function decorators: the shipped std.*
        # always, each installed app's workflow_functions, then the modules the project
        # lists on top.
        import_module("nodes.std")
        autodiscover_modules(FUNCTIONS_MODULE)
        for module in engine_settings.FUNCTION_MODULES:
            import_module(module)
