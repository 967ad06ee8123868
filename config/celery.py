import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
def _pool_child_started(**_: object) -> None:
    """A prefork pool child may end itself when an attempt overstays its hard limit: the
    pool replaces it (executions/worker/watchdog.py). Sent only in pool children, never in
    the main process of a solo or threads pool, where exiting would stop the whole worker."""
    from executions.worker import watchdog

    watchdog.replace_process_on_expiry = True
