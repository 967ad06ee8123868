from django.apps import AppConfig
from django.core.signals import request_started


def _fresh_log_context(**_: object) -> None:
    """A request's log lines carry its own context, not what an earlier request on the same
    thread bound (config/logs.py)."""
    from config import logs

    logs.clear()


class MonitoringConfig(AppConfig):
    name = "monitoring"

    def ready(self) -> None:
        request_started.connect(_fresh_log_context, dispatch_uid="workflow-log-context")
