from django.apps import AppConfig


class ExecutionsConfig(AppConfig):
    name = "executions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The bounds live in a pure module (the engine core imports no Django): hand it
        # the WORKFLOW_... settings once, in every process (web, worker, beat, tests).
        from django.conf import settings

        from workflows.dsl.limits import configure_from

        configure_from(lambda name, default: getattr(settings, name, default))

        # Connects beat_init: beat's scheduler keeps the sweeper (executions/beat.py).
        from executions import beat  # noqa: F401
