"""scripts/services.py against private servers of its own, on free ports (never the shared
PostgreSQL and Redis): start, probe, restart and stop, as `./dev` and the chaos run use it."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import redis

from executions.supervisor import free_port
from scripts import services
from tests.waiting import scaled


@pytest.fixture
def var(monkeypatch) -> Iterator[Path]:
    """A var/ that the `postgres` user can reach too (PostgreSQL runs as it when root)."""
    path = Path(tempfile.mkdtemp(prefix="wf-services-", dir="/tmp"))
    path.chmod(0o755)
    monkeypatch.setattr(services, "VAR", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(services._redis_server() is None, reason="no redis-server")
def test_redis_is_started_restarted_and_stopped_on_its_port(var: Path) -> None:
    target = services.redis_target(f"redis://127.0.0.1:{free_port()}/3")
    assert not services.redis_ready(target)
    try:
        services.start_redis(target)
        client = redis.Redis(host="127.0.0.1", port=target.port, db=3)
        client.set("k", "v")
        assert client.config_get("save") == {"save": ""}, "a test Redis keeps nothing on disk"
        before = client.info("server")["process_id"]
        began = time.monotonic()
        services.restart_redis(target)
        # Promptly: stop waits for the port to close, start for PING, neither for a timeout.
        assert time.monotonic() - began < scaled(10)
        assert services.redis_ready(target)
        assert client.info("server")["process_id"] != before, "the same server still runs"
        assert client.get("k") is None
        assert (var / "redis" / "redis.log").exists()
    finally:
        services.stop_redis(target)
    assert not services.redis_ready(target)
    services.stop_redis(target)  # already stopped: nothing to do


def test_a_probe_of_a_closed_port_answers_at_once() -> None:
    # redis-py retries a refused connection three times by default (seconds each outage):
    # a probe tries once, and a refusal is its answer.
    redis_port, pg_port = free_port(), free_port()
    tried: list[Any] = []
    connect = socket.socket.connect

    def counted(sock: socket.socket, address: Any) -> None:
        tried.append(address)
        connect(sock, address)

    with mock.patch.object(socket.socket, "connect", counted):
        assert not services.redis_ready(services.redis_target(f"redis://127.0.0.1:{redis_port}"))
        assert tried == [("127.0.0.1", redis_port)]
        assert not services.postgres_ready(
            services.pg_target(f"postgres://x@127.0.0.1:{pg_port}/d")
        )
        assert tried == [("127.0.0.1", redis_port), ("127.0.0.1", pg_port)]


@pytest.mark.skipif(services._pg("initdb") is None, reason="no PostgreSQL software")
def test_a_private_postgres_cluster_is_created_restarted_and_stopped(var: Path) -> None:
    import psycopg

    target = services.pg_target(f"postgres://postgres@127.0.0.1:{free_port()}/wf_private")
    try:
        services.start_postgres(target)
        services.ensure_database(target)
        services.ensure_database(target)  # already there: nothing to do
        url = f"postgres://postgres@127.0.0.1:{target.port}/wf_private"
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("wf_private",)
            if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as `postgres`
                owner = (var / "pgdata").stat().st_uid
                assert owner == __import__("pwd").getpwnam("postgres").pw_uid
        services.restart_postgres(target)
        assert services.postgres_ready(target)
    finally:
        services.stop_postgres(target)
    assert not services.postgres_ready(target)


@pytest.mark.skipif(services._redis_server() is None, reason="no redis-server")
def test_postgres_stop_refuses_a_server_it_did_not_start(var: Path) -> None:
    """Something else answering on the port (here a Redis) is never stopped as PostgreSQL."""
    other = services.redis_target(f"redis://127.0.0.1:{free_port()}")
    services.start_redis(other)
    try:
        with pytest.raises(services.ServiceError, match="not stopping it"):
            services.stop_postgres(services.pg_target(f"postgres://p@127.0.0.1:{other.port}/d"))
        assert services.redis_ready(other)
    finally:
        services.stop_redis(other)


def test_remote_servers_are_never_started_or_stopped() -> None:
    remote = services.redis_target("redis://192.0.2.1:6379/0")
    with pytest.raises(services.ServiceError, match="non-local"):
        services.stop_redis(remote)
    with pytest.raises(services.ServiceError, match="non-local"):
        services.stop_postgres(services.pg_target("postgres://p@192.0.2.1/d"))


def test_installed_names_missing_software_only_for_local_targets(monkeypatch, capsys) -> None:
    monkeypatch.setattr(services.shutil, "which", lambda name: None)
    monkeypatch.setattr(services, "PG_BIN_DIRS", ())
    monkeypatch.setenv("WORKFLOW_TEST_DATABASE_URL", "postgres://p@127.0.0.1/d")
    monkeypatch.setenv("WORKFLOW_TEST_BROKER_URL", "redis://192.0.2.1:6379/0")
    assert services.installed() == ["postgresql"]
    assert services.main(["installed"]) == services.EXIT_NOT_INSTALLED
    assert capsys.readouterr().out.strip() == "postgresql"
