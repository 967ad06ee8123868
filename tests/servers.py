"""A real HTTP server on 127.0.0.1 for HTTP-node tests, answering from a plain function."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


#: (request, requests seen so far, this one included) -> (status, JSON body)
Responder = Callable[[Request, list[Request]], tuple[int, Any]]


@dataclass
class Server:
    url: str
    seen: list[Request] = field(default_factory=list)

    def hits(self, path: str) -> int:
        return sum(1 for request in self.seen if request.path == path)


@contextmanager
def http_server(respond: Responder) -> Iterator[Server]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(self.command, self.path, dict(self.headers), self.rfile.read(length))
            with lock:
                server.seen.append(request)
                status, payload = respond(request, list(server.seen))
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server = Server(url=f"http://127.0.0.1:{httpd.server_address[1]}")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
