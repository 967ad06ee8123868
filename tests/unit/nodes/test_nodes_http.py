"""The HTTP executor against a real local server. Only loopback traffic is ever sent."""

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from nodes.context import NodeContext
from nodes.errors import NodeError
from nodes.executors import addresses
from nodes.executors.http import MAX_BODY_BYTES, _retry_after_seconds, run_http
from nodes.executors.transport import GuardedTransport

LOCAL = ["127.0.0.1"]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    port: int
    requests: list[Seen] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


class Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _reply(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.server.record.requests.append(seen)  # type: ignore[attr-defined]
        path = self.path.split("?")[0]
        if path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            extra = {"Retry_After": "7"} if status == 429 else {}
            self._reply(status, f"status {status}".encode(), "text/plain", **extra)
        elif path == "/text":
            self._reply(200, "héllo".encode(), "text/plain; charset=utf-8")
        elif path == "/badjson":
            self._reply(200, b"not json{", "application/json")
        elif path == "/big":
            self._reply(200, b"x" * (MAX_BODY_BYTES + 5000), "text/plain")
        elif path == "/redirect":
            self._reply(302, b"", "text/plain", Location="/json")
        elif path == "/slow":
            time.sleep(1.5)
            self._reply(200, b"{}", "application/json")
        else:
            payload = {
                "method": self.command,
                "path": self.path,
                "json": json.loads(body) if body else None,
            }
            self._reply(200, json.dumps(payload).encode(), "application/json", X_Custom="yes")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record = Server(port=httpd.server_address[1])
    httpd.record = record  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield record
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def ctx() -> NodeContext:
    return NodeContext("exec-1", "call_api", 1)


@pytest.fixture
def no_connections(monkeypatch) -> list[tuple]:
    """Fail on any attempt to open a TCP connection."""
    attempts: list[tuple] = []

    def refuse(address, *args, **kwargs):
        attempts.append(address)
        raise AssertionError(f"unexpected connection to {address}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


def call(request: dict, ctx: NodeContext, **kwargs) -> dict:
    options: dict[str, Any] = {"success_status": None, "allowed_hosts": LOCAL, "timeout": 5.0}
    options.update(kwargs)
    return run_http(request, ctx, **options)


def test_200_json(server, ctx):
    out = call(
        {"method": "post", "url": server.url("/json"), "params": {"q": "1"}, "json": {"a": 1}},
        ctx,
    )
    assert out["status_code"] == 200
    assert out["body"] == {"method": "POST", "path": "/json?q=1", "json": {"a": 1}}
    assert out["headers"]["x-custom"] == "yes"
    assert out["headers"]["content-type"] == "application/json"
    assert all(name == name.lower() for name in out["headers"])
    json.dumps(out)


def test_idempotency_key_is_sent(server, ctx):
    call({"url": server.url("/json")}, ctx)
    assert server.requests[-1].headers["idempotency-key"] == "exec-1:call_api"


def test_request_idempotency_key_wins(server, ctx):
    call({"url": server.url("/json"), "headers": {"idempotency-key": "mine"}}, ctx)
    assert server.requests[-1].headers["idempotency-key"] == "mine"


def test_text_body_and_raw_body(server, ctx):
    out = call({"method": "PUT", "url": server.url("/text"), "body": "raw data"}, ctx)
    assert out["body"] == "héllo"
    assert server.requests[-1].body == b"raw data"


def test_invalid_json_is_returned_as_text(server, ctx):
    assert call({"url": server.url("/badjson")}, ctx)["body"] == "not json{"


def test_big_body_is_truncated(server, ctx):
    out = call({"url": server.url("/big")}, ctx)
    assert len(out["body"]) == MAX_BODY_BYTES


def test_503_is_retryable(server, ctx):
    with pytest.raises(NodeError) as info:
        call({"url": server.url("/status/503")}, ctx)
    error = info.value
    assert (error.type, error.retryable) == ("HTTPStatusError", True)
    assert error.details == {"status_code": 503, "body": "status 503"}


def test_404_is_not_retryable(server, ctx):
    with pytest.raises(NodeError) as info:
        call({"url": server.url("/status/404")}, ctx)
    assert (info.value.type, info.value.retryable) == ("HTTPStatusError", False)
    assert info.value.details["status_code"] == 404


def test_429_with_retry_after(server, ctx):
    with pytest.raises(NodeError) as info:
        call({"url": server.url("/status/429")}, ctx)
    error = info.value
    assert (error.type, error.retryable) == ("HTTPStatusError", True)
    assert error.details["retry_after_seconds"] == 7
    assert error.as_dict()["status_code"] == 429


def test_retry_after_http_date():
    in_ten = formatdate(time.time() + 10, usegmt=True)
    seconds = _retry_after_seconds(in_ten)
    assert seconds is not None
    assert 8 <= seconds <= 10
    assert _retry_after_seconds("garbage") is None
    assert _retry_after_seconds("-3") == 0


def test_custom_success_status(server, ctx):
    out = call({"url": server.url("/status/404")}, ctx, success_status=(404,))
    assert out["status_code"] == 404
    with pytest.raises(NodeError):
        call({"url": server.url("/json")}, ctx, success_status=(201,))


def test_redirects_are_not_followed(server, ctx):
    with pytest.raises(NodeError) as info:
        call({"url": server.url("/redirect")}, ctx)
    assert info.value.retryable is False
    assert info.value.details["location"] == "/json"
    assert [r.path for r in server.requests] == ["/redirect"]


def test_connection_refused_is_retryable(ctx):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NodeError) as info:
        call({"url": f"http://127.0.0.1:{port}/"}, ctx)
    assert (info.value.type, info.value.retryable) == ("HTTPConnectionError", True)


def test_timeout_is_retryable(server, ctx):
    with pytest.raises(NodeError) as info:
        call({"url": server.url("/slow")}, ctx, timeout=0.3)
    assert (info.value.type, info.value.retryable) == ("HTTPConnectionError", True)
    assert info.value.details["timeout"] is True


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"url": "ftp://127.0.0.1/"},
        {"url": "/relative"},
        {"url": "http://127.0.0.1/", "method": "BREW"},
        {"url": "http://127.0.0.1/", "json": {}, "body": "x"},
        {"url": "http://127.0.0.1/", "body": {"not": "a string"}},
    ],
)
def test_invalid_requests(ctx, no_connections, request_):
    with pytest.raises(NodeError) as info:
        call(request_, ctx)
    assert (info.value.type, info.value.retryable) == ("InvalidRequest", False)
    assert no_connections == []


def test_allowed_hosts_ignore_case_and_port(server, ctx):
    out = call({"url": server.url("/json")}, ctx, allowed_hosts=["127.0.0.1:1"])
    assert out["status_code"] == 200
    out = call({"url": server.url("/json", host="LocalHost")}, ctx, allowed_hosts=["LOCALHOST"])
    assert out["status_code"] == 200


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/json",
        "http://localhost:{port}/json",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:{port}/json",
        "http://0.0.0.0:{port}/json",
        "http://[::ffff:127.0.0.1]:{port}/json",
        "http://[::]:{port}/json",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
    ],
)
@pytest.mark.parametrize("allowed", [[], ["example.com"]])
def test_forbidden_addresses_are_refused_without_traffic(server, ctx, no_connections, url, allowed):
    with pytest.raises(NodeError) as info:
        call({"url": url.format(port=server.port)}, ctx, allowed_hosts=allowed)
    assert (info.value.type, info.value.retryable) == ("ForbiddenAddress", False)
    assert no_connections == []
    assert server.requests == []


def test_guarded_transport_refuses_on_its_own(server, ctx, no_connections):
    with httpx.Client(transport=GuardedTransport([])) as client, pytest.raises(NodeError) as info:
        client.get(server.url("/json"))
    assert info.value.type == "ForbiddenAddress"
    assert no_connections == []
    assert server.requests == []


def test_dns_rebinding_is_caught_at_connect_time(server, ctx, monkeypatch, no_connections):
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # public when checked, then loopback
    monkeypatch.setattr(addresses, "resolve", lambda host, port: next(answers))
    with pytest.raises(NodeError) as info:
        call({"url": server.url("/json", host="rebind.test")}, ctx, allowed_hosts=[])
    assert info.value.type == "ForbiddenAddress"
    assert no_connections == []
    assert server.requests == []


def test_connection_goes_to_the_resolved_address_with_host_preserved(server, ctx, monkeypatch):
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["127.0.0.1"])
    out = call({"url": server.url("/json", host="pinned.test")}, ctx, allowed_hosts=["pinned.test"])
    assert out["status_code"] == 200
    assert server.requests[-1].headers["host"] == f"pinned.test:{server.port}"


def test_unresolvable_host_is_retryable(ctx, monkeypatch, no_connections):
    def fail(host, port):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(addresses, "resolve", fail)
    with pytest.raises(NodeError) as info:
        call({"url": "http://nowhere.test/"}, ctx, allowed_hosts=[])
    assert (info.value.type, info.value.retryable) == ("HTTPConnectionError", True)


def test_cancelled_attempt_sends_nothing(server, ctx):
    ctx.cancel()
    from nodes.errors import NodeCancelled

    with pytest.raises(NodeCancelled):
        call({"url": server.url("/json")}, ctx)
    assert server.requests == []
