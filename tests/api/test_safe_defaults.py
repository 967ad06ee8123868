"""Safe defaults: no start with DEBUG off and the built-in SECRET_KEY, TLS
settings from the environment, run_demo leaves existing users alone, tokens masked in the
admin, /healthz says what is down without echoing connection details."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.admin.models import LogEntry
from kombu import Connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from config.demo.runner import DemoUserUnusable, ensure_admin
from executions.metrics import health

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "import json, django; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({k: getattr(s, k, None) for k in ('DEBUG', 'SESSION_COOKIE_SECURE', "
    "'CSRF_COOKIE_SECURE', 'SECURE_HSTS_SECONDS', 'CSRF_TRUSTED_ORIGINS', "
    "'SECURE_PROXY_SSL_HEADER')}))"
)


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    """config.settings loaded by a fresh process with exactly these variables set."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "WORKFLOW_VAR_DIR", "HOME")}
    return subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**keep, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_debug_off_with_the_built_in_secret_key_refuses_to_start() -> None:
    refused = settings_with()
    assert refused.returncode != 0
    assert "refusing to start: DEBUG is off and SECRET_KEY is the built-in" in refused.stderr
    assert settings_with(DEBUG="1").returncode == 0
    assert settings_with(SECRET_KEY="a-real-key-from-the-environment").returncode == 0


def test_tls_and_proxy_settings_come_from_the_environment() -> None:
    plain = json.loads(settings_with(SECRET_KEY="k").stdout)
    assert plain["SESSION_COOKIE_SECURE"] is False
    assert plain["SECURE_HSTS_SECONDS"] == 0
    assert plain["CSRF_TRUSTED_ORIGINS"] == []
    assert plain["SECURE_PROXY_SSL_HEADER"] is None
    behind = settings_with(
        SECRET_KEY="k",
        WORKFLOW_TLS="1",
        CSRF_TRUSTED_ORIGINS="https://wf.example.com,https://ops.example.com",
        SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
    )
    shown = json.loads(behind.stdout)
    assert shown["SESSION_COOKIE_SECURE"] is True
    assert shown["CSRF_COOKIE_SECURE"] is True
    assert shown["SECURE_HSTS_SECONDS"] == 31536000
    assert shown["CSRF_TRUSTED_ORIGINS"] == ["https://wf.example.com", "https://ops.example.com"]
    assert shown["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    bad = settings_with(SECRET_KEY="k", SECURE_PROXY_SSL_HEADER="X_FORWARDED_PROTO")
    assert bad.returncode != 0
    assert "HEADER,value" in bad.stderr


@pytest.mark.django_db
def test_run_demo_never_changes_an_existing_user(django_user_model) -> None:
    lines: list[str] = []
    mine = django_user_model.objects.create_superuser("admin", "me@example.com", "my-own-pw")
    key = ensure_admin(lines.append)
    mine.refresh_from_db()
    assert mine.check_password("my-own-pw")
    assert not mine.check_password("admin")
    assert Token.objects.get(user=mine).key == key
    django_user_model.objects.filter(pk=mine.pk).update(is_superuser=False)
    with pytest.raises(DemoUserUnusable, match="never changes an existing user"):
        ensure_admin(lines.append)
    mine.refresh_from_db()
    assert not mine.is_superuser
    assert mine.check_password("my-own-pw")


@pytest.mark.django_db
def test_run_demo_makes_its_admin_on_a_fresh_database(django_user_model) -> None:
    ensure_admin(lambda line: None)
    assert django_user_model.objects.get(username="admin").check_password("admin")


@pytest.mark.django_db
def test_tokens_are_masked_everywhere_in_the_admin(client, django_user_model) -> None:
    boss = django_user_model.objects.create_superuser("boss", "b@example.com", "pw-boss-1")
    other = django_user_model.objects.create_user("other", password="pw-other-1")
    keys = [Token.objects.create(user=user).key for user in (boss, other)]
    client.force_login(boss)
    pages = [
        "/admin/authtoken/tokenproxy/",
        f"/admin/authtoken/tokenproxy/{other.pk}/change/",
        f"/admin/authtoken/tokenproxy/{other.pk}/delete/",
    ]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        text = response.content.decode()
        assert not any(key in text for key in keys), page
    assert f"{keys[1][:6]}…" in client.get(pages[0]).content.decode()
    response = client.post(pages[2], {"post": "yes"})
    assert response.status_code == 302
    entry = LogEntry.objects.get()
    assert keys[1] not in entry.object_repr
    assert keys[1][:6] in entry.object_repr


@pytest.mark.django_db
def test_healthz_names_what_is_down_without_connection_details(monkeypatch) -> None:
    monkeypatch.setattr(
        "executions.metrics.health.broker_connection",
        lambda: Connection("redis://:hunter2-pw@127.0.0.1:1/0", connect_timeout=0.5),
    )

    def database_down() -> None:
        raise RuntimeError(
            'connection to "db.internal" failed: password authentication failed for user '
            '"wf" (postgres://wf:s3cret-pw@db.internal:5432/workflow)'
        )

    monkeypatch.setitem(health.CHECKS, "database", database_down)
    response = APIClient().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "RuntimeError: authentication failed"
    assert body["broker"].endswith(": connection refused")
    text = response.content.decode()
    for secret in ("hunter2-pw", "s3cret-pw", "db.internal", "127.0.0.1", "wf"):
        assert secret not in text, secret
