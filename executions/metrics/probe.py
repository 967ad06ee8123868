"""Container healthchecks: `python -m executions.metrics.probe web|worker|beat` exits 0 when the
process of that kind in this container does its job, else 1 with the reason on stderr.

- web: GET /healthz on this container's port answers 200 (database and broker reachable),
  asked with a Host the settings allow and, behind a TLS proxy, the proxy's header, so
  neither ALLOWED_HOSTS nor SECURE_SSL_REDIRECT turns a healthy server into a failure.
- worker: the worker named `celery@<this host>` answers a control ping over the broker
  (what `celery inspect ping -d celery@$HOSTNAME` does).
- beat: beat's heartbeat file (executions/beat.py) was touched within --max-age seconds.
"""

from __future__ import annotations

import argparse
import http.client
import os
import socket
import sys
import time
from collections.abc import Sequence

from celery import current_app

#: Seconds a probe waits for an answer: a healthcheck must not hang on a dead peer.
TIMEOUT = 5.0
#: Beat ticks at least every 5 s; this much silence means its loop is stuck or gone.
BEAT_MAX_AGE = 30.0


def host_header(allowed_hosts: Sequence[str]) -> str:
    """A Host that ALLOWED_HOSTS accepts ('.example.com' allows example.com itself)."""
    for host in allowed_hosts:
        if host == "*":
            return "localhost"
        if host:
            return host.removeprefix(".")
    return "localhost"


def probe_headers() -> dict[str, str]:
    from django.conf import settings

    headers = {"Host": host_header(settings.ALLOWED_HOSTS), "Accept": "application/json"}
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy:  # ("HTTP_X_FORWARDED_PROTO", "https") -> X-Forwarded-Proto: https
        name, value = proxy
        headers[name.removeprefix("HTTP_").replace("_", "-").title()] = value
    return headers


def probe_web(port: int, timeout: float = TIMEOUT) -> str | None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", "/healthz", headers=probe_headers())
        response = connection.getresponse()
        body = response.read(500)
    except OSError as exc:
        return f"web: GET /healthz on port {port} failed: {exc}"
    finally:
        connection.close()
    if response.status != 200:
        return f"web: GET /healthz answered {response.status}: {body.decode(errors='replace')}"
    return None


def probe_worker(name: str, timeout: float = TIMEOUT) -> str | None:
    try:
        replies = current_app.control.ping(destination=[name], timeout=timeout)
    except Exception as exc:  # the broker is down: that is the answer
        return f"worker: cannot reach the broker: {type(exc).__name__}"
    if not any(name in reply for reply in replies or []):
        return f"worker: {name} did not answer a ping within {timeout:g}s"
    return None


def probe_beat(max_age: float = BEAT_MAX_AGE, now: float | None = None) -> str | None:
    from executions.beat import heartbeat_path

    path = heartbeat_path()
    try:
        age = (time.time() if now is None else now) - path.stat().st_mtime
    except FileNotFoundError:
        return f"beat: no heartbeat at {path} (beat not started, or not the engine's scheduler)"
    if age > max_age:
        return f"beat: last tick {age:.0f}s ago (more than {max_age:g}s; heartbeat {path})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m executions.metrics.probe", description=__doc__)
    parser.add_argument("kind", choices=["web", "worker", "beat"])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--name", default=f"celery@{socket.gethostname()}", help="worker")
    parser.add_argument("--max-age", type=float, default=BEAT_MAX_AGE, help="beat (seconds)")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    if args.kind == "web":
        problem = probe_web(args.port)
    elif args.kind == "worker":
        problem = probe_worker(args.name)
    else:
        problem = probe_beat(args.max_age)
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print(f"{args.kind}: healthy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
