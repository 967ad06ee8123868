"""A raw TCP HTTP server for tests that need what http.server cannot do cleanly: drip a
response byte by byte, or send any header value at all (`Retry-After: inf`)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: The request's first line (e.g. "GET /body HTTP/1.1") -> the reply in segments: (bytes,
#: seconds to wait after each of its bytes; 0 sends the segment at once).
Reply = Callable[[str], list[tuple[bytes, float]]]


@dataclass
class RawServer:
    url: str
    requests: list[str] = field(default_factory=list)


def response(status: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@contextmanager
def _listening(serve: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """A loopback listener handing each connection (and the stop event) to `serve` in a
    thread of its own; yields its base URL."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn, stop), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


def _read_head(conn: socket.socket) -> bytes | None:
    """The request's head, or None if the client left before sending all of it."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 65536:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        head += chunk
    return head


@contextmanager
def raw_http_server(reply: Reply) -> Iterator[RawServer]:
    server = RawServer(url="")

    def serve(conn: socket.socket, stop: threading.Event) -> None:
        with conn:
            head = _read_head(conn)
            if head is None:
                return
            line = head.split(b"\r\n", 1)[0].decode(errors="replace")
            server.requests.append(line)
            try:
                for payload, per_byte in reply(line):
                    if per_byte <= 0:
                        conn.sendall(payload)
                        continue
                    for byte in payload:
                        if stop.is_set():
                            return
                        conn.sendall(bytes([byte]))
                        time.sleep(per_byte)
            except OSError:
                return  # the client gave up: what the drip tests want

    with _listening(serve) as url:
        server.url = url
        yield server


@dataclass
class HangingServer:
    """Reads each request and never answers; records, on its own monotonic clock, when a
    request arrived and when its client closed the connection."""

    url: str
    #: ("request", t) and ("closed", t) in the order they happened.
    log: list[tuple[str, float]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)

    def at(self, what: str) -> float:
        return next(t for name, t in self.log if name == what)


@contextmanager
def hanging_http_server() -> Iterator[HangingServer]:
    server = HangingServer(url="")

    def serve(conn: socket.socket, stop: threading.Event) -> None:
        with conn:
            if _read_head(conn) is None:
                return
            server.log.append(("request", time.monotonic()))
            server.arrived.set()
            # Short slices, so the server stops with the test; recv returns b"" (or
            # fails) as soon as the client closes its end.
            conn.settimeout(0.02)
            while not stop.is_set():
                try:
                    if conn.recv(1) == b"":
                        break
                except TimeoutError:
                    continue
                except OSError:
                    break
            else:
                return
            server.log.append(("closed", time.monotonic()))
            server.closed.set()

    with _listening(serve) as url:
        server.url = url
        yield server
