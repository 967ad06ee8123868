from django.apps import AppConfig

from workflows.conf import configure_limits


class ExecutionsConfig(AppConfig):
    name = "executions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The bounds live in a pure module (the engine core imports no Django): hand it
        # the settings once, in every process (web, worker, beat, tests).
        configure_limits()

        # Connects beat_init: beat's scheduler keeps the sweeper (executions/beat.py).
        from executions import beat  # noqa: F401
