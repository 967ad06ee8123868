# settings.py: the engine's apps next to your own, and the broker.
from workflows.celery import as_django_settings, recommended_settings

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # The engine and what it builds on:
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "workflows",
    "executions",
    "nodes",
    # Your own apps:
    "shop",
]

CELERY_BROKER_URL = "redis://localhost:6379/0"

# Recommended, not required: one message reserved per worker process, the ten execution
# priorities served apart on Redis, and workers that wait for a broker started after them.
globals().update(as_django_settings(recommended_settings(CELERY_BROKER_URL)))
