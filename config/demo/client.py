"""The demo's REST calls: wait for the web process, start an execution."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from config.demo.display import Clock

WORKFLOW_NAME = "user-signup"
DEMO_INPUT = {"user_id": 42, "email": "ada@example.com"}


class DemoError(Exception):
    """Something went wrong that a message explains; the demo stops with exit code 1."""


class DemoClient:
    """The API through `http`; `check` raises if a child process died (a likelier cause)."""

    def __init__(self, http: httpx.Client, check: Callable[[], None]):
        self.http = http
        self.check = check

    def call(self, method: str, url: str, expect: tuple[int, ...] = (200,), **kwargs) -> Any:
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            self.check()
            raise DemoError(f"{method} {url} failed: {exc}") from exc
        if response.status_code not in expect:
            raise DemoError(
                f"{method} {url} answered {response.status_code}: {response.text[:800]}"
            )
        try:
            return response.json() if response.content else None
        except ValueError as exc:
            raise DemoError(f"{method} {url} answered non-JSON: {response.text[:300]}") from exc

    def pages(self, url: str) -> Iterator[dict]:
        """Every item of a list endpoint, following `next` links."""
        next_url: str | None = url
        while next_url:
            body = self.call("GET", next_url)
            if isinstance(body, list):
                yield from body
                return
            yield from body.get("results", [])
            next_url = body.get("next")


def wait_for_web(
    client: DemoClient, base_url: str, timeout: float, clock: Clock, out: Callable[[str], None]
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        client.check()
        try:
            response = client.http.get("/executions")
            if response.status_code < 500:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise DemoError(
                f"the web process did not answer on {base_url} within "
                f"{timeout:.0f}s; see var/logs/web.log"
            )
        time.sleep(0.25)
    out(f"Web is up on {base_url} ({clock.seconds():.1f}s)")


def start_execution(
    client: DemoClient, version: int | None, clock: Clock, out: Callable[[str], None]
) -> str:
    body: dict[str, Any] = {"workflow": WORKFLOW_NAME, "input": DEMO_INPUT}
    if version is not None:
        body["version"] = version
    execution = client.call("POST", "/executions", expect=(201,), json=body)
    execution_id = execution["id"]
    clock.reset()
    out("")
    out(
        f"Execution {execution_id} of {WORKFLOW_NAME} v{version} with input "
        f"{json.dumps(DEMO_INPUT)}"
    )
    return str(execution_id)
