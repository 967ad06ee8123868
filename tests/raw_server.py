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
def raw_http_server(reply: Reply) -> Iterator[RawServer]:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    server = RawServer(url=f"http://127.0.0.1:{listener.getsockname()[1]}")
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
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

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield server
    finally:
        stop.set()
        listener.close()
