"""Settings come from the environment; every default runs with no server at all.

DATABASE_URL unset -> SQLite file under var/; CELERY_BROKER_URL unset -> kombu's
filesystem transport under var/broker/, so web, worker and beat can be separate
processes on one machine with nothing installed.
"""

import os
from pathlib import Path

import dj_database_url
from kombu import Queue

from workflows.celery import QUEUES as ENGINE_QUEUES
from workflows.celery import as_django_settings, recommended_settings
from workflows.conf import from_environment
from workflows.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("WORKFLOW_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def _list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


SECRET_KEY = os.environ.get("SECRET_KEY", "dev-only-insecure-key-change-me-in-production")
DEBUG = _flag("DEBUG")
ALLOWED_HOSTS = _list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles: `runserver` leaves static files to WhiteNoise, as gunicorn does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    # Swagger UI and Redoc served from the package (/docs, /redoc): no CDN.
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "workflows",
    "executions",
    "nodes",
    # The standalone project's demo: `python manage.py run_demo` and its functions.
    "config.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files in every mode, DEBUG or not (config/staticfiles.py).
    "config.staticfiles.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

_SQLITE_DEFAULT = f"sqlite:///{VAR_DIR / 'workflow.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", _SQLITE_DEFAULT), conn_max_age=60, conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's, with a health check that skips its SELECT 1 round trip while the
    # connection's socket is quiet (config/postgresql/base.py).
    DATABASES["default"]["ENGINE"] = "config.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes share one file: WAL lets readers run beside the writer, and
    # IMMEDIATE takes the write lock at BEGIN, which serializes appends per database
    # (our per-execution lock on SQLite) instead of failing on lock upgrade.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests with real workers need a file the worker processes can open too.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_workflow.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = True
STATIC_URL = "static/"
# Where collectstatic writes (the Docker image collects at build, outside var/). Files
# not collected there are served straight from the apps (config/staticfiles.py).
STATIC_ROOT = Path(os.environ.get("WORKFLOW_STATIC_ROOT", VAR_DIR / "static"))
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic also writes a .gz of each file, which WhiteNoise serves when accepted.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("WORKFLOW_MAX_BODY_BYTES", 1024 * 1024))

# --- Celery -----------------------------------------------------------------
# The engine's recommended settings (workflows/celery.py); its tasks carry their own
# options and queues, so nothing else of the engine's is configured here.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "workflowfs://")
globals().update(as_django_settings(recommended_settings(CELERY_BROKER_URL)))
_BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith(("filesystem://", "workflowfs://")):
    # "workflowfs" is kombu's filesystem transport with atomic writes (executions/broker.py).
    import executions.broker  # noqa: F401  (registers the transport alias)

    for sub in ("queue", "processed", "control"):
        (_BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "control_folder": str(_BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.05,
    }
CELERY_RESULT_BACKEND = None
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes every database connection before and after each task unless
# told to reuse them: a new PostgreSQL connection (and backend process) per attempt, about a
# tenth of a worker's time on a map of no-ops. Reused here; the engine's worker hooks close
# them when Django would after a request (CONN_MAX_AGE, failed health check, errors); the
# fixup still closes them every 2 x this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Task events, so Flower and `celery events` see every task (README: Telemetry). Each
# task then sends a few small event messages; WORKFLOW_CELERY_EVENTS=0 turns them off.
CELERY_WORKER_SEND_TASK_EVENTS = _flag("WORKFLOW_CELERY_EVENTS", default=True)
CELERY_TASK_SEND_SENT_EVENT = CELERY_WORKER_SEND_TASK_EVENTS
# Declared so that a plain `celery -A config worker` consumes the engine's queues.
CELERY_TASK_QUEUES = tuple(Queue(name) for name in ("celery", *ENGINE_QUEUES))
# django-celery-beat's own DatabaseScheduler, as a host project runs it: the engine adds
# its sweeper to it at beat start and restores the entry whenever the table loses it
# (executions/beat.py). Nothing else to configure.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"

# --- Engine -----------------------------------------------------------------
# Every WORKFLOW_<NAME> setting has its default in workflows/conf.py (where each is
# described); here the environment variable of the same name sets it, and
# WORKFLOW_SECRET_<NAME> sets the secret {{ secrets.NAME }}.
WORKFLOW_VAR_DIR = VAR_DIR
globals().update(from_environment(os.environ))

# --- Trust: safe defaults ------------------------------------------------------
# The built-in SECRET_KEY is in the source: sessions, CSRF tokens and password resets
# signed with it can be forged by anyone. Only a DEBUG process may run with it; ./dev and
# the test settings (tests/settings.py) export a key of their own.
BUILT_IN_SECRET_KEY = "dev-only-insecure-key-change-me-in-production"
if not DEBUG and SECRET_KEY == BUILT_IN_SECRET_KEY:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "refusing to start: DEBUG is off and SECRET_KEY is the built-in development key. "
        "Set SECRET_KEY to a long random value (e.g. the output of "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'), or DEBUG=1 for "
        "local development only."
    )
# Origins (scheme://host[:port]) allowed to send unsafe requests with a session, e.g.
# https://workflows.example.com when the API sits behind a proxy on another origin.
CSRF_TRUSTED_ORIGINS = _list("CSRF_TRUSTED_ORIGINS")
# "HEADER,value" that a TLS-terminating proxy sets, e.g. HTTP_X_FORWARDED_PROTO,https.
# Only set it behind a proxy that strips the header from clients' requests.
_PROXY_HEADER = [part.strip() for part in os.environ.get("SECURE_PROXY_SSL_HEADER", "").split(",")]
if any(_PROXY_HEADER):
    if len(_PROXY_HEADER) != 2 or not all(_PROXY_HEADER):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must be 'HEADER,value', e.g. HTTP_X_FORWARDED_PROTO,https"
        )
    SECURE_PROXY_SSL_HEADER = (_PROXY_HEADER[0], _PROXY_HEADER[1])
# WORKFLOW_TLS=1 when clients reach the API over HTTPS (directly or through the proxy):
# cookies only over TLS, and HSTS so browsers never fall back to plain HTTP.
_TLS = _flag("WORKFLOW_TLS")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _TLS
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000")) if _TLS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _TLS and _flag("SECURE_HSTS_INCLUDE_SUBDOMAINS")
# Asks browsers' preload lists to know the site as HTTPS-only: opt in when the domain is ready.
SECURE_HSTS_PRELOAD = _TLS and _flag("SECURE_HSTS_PRELOAD")
# Off by default even behind TLS: health probes often speak plain HTTP to the container.
SECURE_SSL_REDIRECT = _TLS and _flag("SECURE_SSL_REDIRECT")
SESSION_COOKIE_HTTPONLY = True

# JSON lines with each line's execution, node, attempt and worker (workflows/logs.py), or
# WORKFLOW_LOG_FORMAT=plain for people (the demo's children use it).
_LOG_FORMAT = os.environ.get("WORKFLOW_LOG_FORMAT", "json").strip().lower()
LOGGING = logging_config(_LOG_FORMAT, os.environ.get("LOG_LEVEL", "WARNING"))
