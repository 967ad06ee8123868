from django.apps import AppConfig

from workflows.conf import configure_limits


class ExecutionsConfig(AppConfig):
    name = "executions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The bounds live in a pure module (the engine core imports no Django): hand it
        # the settings once, in every process (web, worker, beat, tests).
        configure_limits()

        # Imported once the models are: beat_init makes beat's scheduler keep the sweeper
        # (beat.py), the worker signals set up what every worker needs (hooks.py), and
        # every unit of work stages the metrics' deltas with its events (tally.py).
        from executions import beat  # noqa: F401
        from executions.metrics import tally
        from executions.worker import hooks

        hooks.connect()
        tally.register()
