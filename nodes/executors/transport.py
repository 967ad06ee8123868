"""An httpx transport that connects only to addresses the SSRF guard approved.

The guard and the connection share one DNS resolution: the backend resolves the host,
checks every address, then connects to those very addresses. A name that resolves to a
public address when checked and to a private one a moment later (DNS rebinding) cannot
slip through. The URL's host is kept for the Host header and for TLS (SNI and
certificate checks), since httpcore takes both from the request, not from the socket.
With a deadline, each connection also ends by it, whatever the server does; with an
`interrupt` (the attempt's heartbeat, which raises NodeCancelled once it is cancelled),
a read waiting on the server is sliced so that the interrupt is called every
`INTERRUPT_EVERY_SECONDS`: a cancel closes the connection of a call in flight.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Collection, Iterable
from typing import Any

import httpcore
import httpx

from nodes.context import HEARTBEAT_EVERY_SECONDS
from nodes.executors.addresses import checked_addresses

#: How often a read in flight calls its interrupt: the heartbeat's own cadence, so a
#: slow response costs what a heartbeating function does and a cancel lands within it.
INTERRUPT_EVERY_SECONDS = HEARTBEAT_EVERY_SECONDS


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and TLS handshake waits at most until one
    deadline for the whole request. Per-operation timeouts alone let a server that drips
    a byte a second hold the worker forever: each read succeeds in time."""

    def __init__(
        self,
        stream: httpcore.NetworkStream,
        deadline: float,
        interrupt: Callable[[], None] | None = None,
    ) -> None:
        self.stream, self.deadline, self.interrupt = stream, deadline, interrupt
        self.interrupted_at = time.monotonic()

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0 or (timeout is not None and timeout <= 0):
            raise error("the request's total deadline passed")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self.interrupt is None:
            return self.stream.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            self._maybe_interrupt()
            wait = None if until is None else until - time.monotonic()
            left = self._left(wait, httpcore.ReadTimeout)
            step = min(left, INTERRUPT_EVERY_SECONDS)
            try:
                # A recv that timed out consumed nothing: reading again is safe.
                return self.stream.read(max_bytes, step)
            except httpcore.ReadTimeout:
                if step >= left:
                    raise

    def _maybe_interrupt(self) -> None:
        """Call the interrupt once per INTERRUPT_EVERY_SECONDS, also while a server drips
        bytes fast enough that no read times out."""
        assert self.interrupt is not None
        now = time.monotonic()
        if now - self.interrupted_at >= INTERRUPT_EVERY_SECONDS:
            self.interrupted_at = now
            self.interrupt()

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        wait = self._left(timeout, httpcore.ConnectTimeout)
        return DeadlineStream(
            self.stream.start_tls(ssl_context, server_hostname, wait),
            self.deadline,
            self.interrupt,
        )

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class GuardedBackend(httpcore.SyncBackend):
    """Resolves and checks the host itself, then connects to the checked addresses; with
    a `deadline` (time.monotonic()), every connection ends by it and its reads call
    `interrupt` as they wait."""

    def __init__(
        self,
        allowed_hosts: Collection[str],
        deadline: float | None = None,
        interrupt: Callable[[], None] | None = None,
    ) -> None:
        self.allowed_hosts = tuple(allowed_hosts)
        self.deadline = deadline
        self.interrupt = interrupt

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
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise httpcore.ConnectTimeout("the request's total deadline passed")
                timeout = left if timeout is None else min(timeout, left)
            try:
                stream = super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
                continue
            if self.deadline is None:
                return stream
            return DeadlineStream(stream, self.deadline, self.interrupt)
        assert error is not None  # checked_addresses never returns an empty list
        raise error


class GuardedTransport(httpx.HTTPTransport):
    """``httpx.HTTPTransport`` without proxies whose connections go through the guard."""

    def __init__(
        self,
        allowed_hosts: Collection[str],
        deadline: float | None = None,
        interrupt: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            network_backend=GuardedBackend(allowed_hosts, deadline, interrupt),
        )
