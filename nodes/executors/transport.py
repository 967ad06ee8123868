"""An httpx transport that connects only to addresses the SSRF guard approved.

The guard and the connection share one DNS resolution: the backend resolves the host,
checks every address, then connects to those very addresses. A name that resolves to a
public address when checked and to a private one a moment later (DNS rebinding) cannot
slip through. The URL's host is kept for the Host header and for TLS (SNI and
certificate checks), since httpcore takes both from the request, not from the socket.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import httpcore
import httpx

from nodes.executors.addresses import checked_addresses


class GuardedBackend(httpcore.SyncBackend):
    """Resolves and checks the host itself, then connects to the checked addresses."""

    def __init__(self, allowed_hosts: Collection[str]) -> None:
        self.allowed_hosts = tuple(allowed_hosts)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = checked_addresses(host, port, self.allowed_hosts)  # raises NodeError
        error: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        assert error is not None  # checked_addresses never returns an empty list
        raise error


class GuardedTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` without proxies whose connections go through the guard."""

    def __init__(self, allowed_hosts: Collection[str]) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            network_backend=GuardedBackend(allowed_hosts),
        )
