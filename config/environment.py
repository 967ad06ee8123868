"""The environment variables the standalone project (config/settings.py, the Docker image)
reads besides the engine's own WORKFLOW_<NAME> settings (workflows/conf.py): each with its
default and meaning. docs/reference/settings.md is generated from this table and from the
engine's; the generator fails on a variable config/settings.py reads that neither has."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    #: As the reader would write it (the settings module computes some from others).
    default: str
    description: str


VARIABLES: dict[str, Variable] = {
    "DATABASE_URL": Variable(
        "a SQLite file in WORKFLOW_VAR_DIR",
        "The database, as a URL: postgres://user:password@host:5432/name in production. "
        "SQLite runs with WAL, several processes sharing the file.",
    ),
    "CELERY_BROKER_URL": Variable(
        "workflowfs:// (an embedded broker in files, no server)",
        "The Celery broker: redis://host:6379/0 in production.",
    ),
    "SECRET_KEY": Variable(
        "a development key, refused unless DEBUG is on",
        "Django's signing key (sessions, CSRF): a long random value in production.",
    ),
    "DEBUG": Variable("off", "Django's DEBUG: 1 for local development only."),
    "ALLOWED_HOSTS": Variable(
        "localhost,127.0.0.1,[::1],testserver",
        "Host names the API answers to, comma-separated.",
    ),
    "CSRF_TRUSTED_ORIGINS": Variable(
        "none",
        "Origins (scheme://host[:port]) allowed to send unsafe requests with a session, "
        "e.g. https://workflows.example.com behind a proxy on another origin.",
    ),
    "SECURE_PROXY_SSL_HEADER": Variable(
        "none",
        '"HEADER,value" a TLS-terminating proxy sets, e.g. HTTP_X_FORWARDED_PROTO,https. '
        "Only behind a proxy that strips the header from clients' requests.",
    ),
    "WORKFLOW_TLS": Variable(
        "off",
        "1 when clients reach the API over HTTPS: cookies only over TLS, and HSTS.",
    ),
    "SECURE_HSTS_SECONDS": Variable("31536000", "HSTS max-age, with WORKFLOW_TLS."),
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": Variable(
        "off", "HSTS for the subdomains too, with WORKFLOW_TLS."
    ),
    "SECURE_HSTS_PRELOAD": Variable(
        "off",
        "Ask browsers' preload lists to know the site as HTTPS-only, with WORKFLOW_TLS.",
    ),
    "SECURE_SSL_REDIRECT": Variable(
        "off",
        "Redirect plain HTTP to HTTPS, with WORKFLOW_TLS (off by default: health probes "
        "often speak plain HTTP to the container).",
    ),
    "WORKFLOW_VAR_DIR": Variable(
        "var/ in the project",
        "The engine's files (WORKFLOW_VAR_DIR above), and here also the SQLite database, "
        "the embedded broker's files and the collected static files.",
    ),
    "WORKFLOW_STATIC_ROOT": Variable(
        "WORKFLOW_VAR_DIR/static", "Where collectstatic writes the admin's and API's files."
    ),
    "WORKFLOW_MAX_BODY_BYTES": Variable(
        "1048576", "The largest request body the API reads; a larger one is a 413."
    ),
    "WORKFLOW_CELERY_EVENTS": Variable(
        "on",
        "Celery task events, so Flower and `celery events` see every task; 0 turns them off.",
    ),
    "WORKFLOW_LOG_FORMAT": Variable(
        "json",
        "json: one JSON line per record, with its execution, node, attempt and worker; "
        "plain: for people.",
    ),
    "LOG_LEVEL": Variable("WARNING", "The root logger's level."),
}
