"""What the chaos run executes: a 10-node DAG (fan-out, fan-in, sleeps, one HTTP call)
and the local HTTP server that HTTP node calls, which counts requests per Idempotency-Key.

The DAG is limited twice, so the run proves limits hold while slot holders are killed:
at most CONCURRENCY_LIMIT executions per input group run at once (workflow-level
concurrency), and its slowest fetch runs in a pool of POOL_SLOTS across all executions."""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A killed attempt is timed out this soon after its worker dies.
HEARTBEAT_SECONDS = 3
RETRY_POLICY = {
    "max_attempts": 10,
    "initial_interval_seconds": 0.5,
    "backoff_coefficient": 1.5,
    "max_interval_seconds": 3,
}
WORK = {"prepare": 0.2, "fetch_a": 0.5, "fetch_b": 1.0, "fetch_c": 0.3}
WORK_AFTER_MERGE = {"score": 0.4, "report": 0.6}
#: Executions fall into GROUPS concurrency keys (input.group), each let in LIMIT at a time.
GROUPS = 4
CONCURRENCY_LIMIT = 3
#: fetch_b holds a slot of this pool while it runs: fewer slots than executions running.
POOL = "chaos-fetch"
POOL_SLOTS = 4
POOL_NODES = ("fetch_b",)


def group_of(n: int) -> str:
    return f"g{n % GROUPS}"


def execution_input(n: int) -> dict[str, Any]:
    return {"n": n, "group": group_of(n)}


def _work(node_id: str, seconds: float, depends_on: list[str]) -> dict[str, Any]:
    node = {
        "id": node_id,
        "type": "function",
        "function": "chaos.work",
        "depends_on": depends_on,
        "input": {"n": "{{ input.n }}", "seconds": seconds},
        "heartbeat_timeout_seconds": HEARTBEAT_SECONDS,
    }
    return {**node, "pool": POOL} if node_id in POOL_NODES else node


def definition(url: str) -> dict[str, Any]:
    fetches = ["fetch_a", "fetch_b", "fetch_c"]
    nodes = [
        _work("prepare", WORK["prepare"], []),
        *(_work(node_id, WORK[node_id], ["prepare"]) for node_id in fetches),
        {
            "id": "notify",
            "type": "http",
            "depends_on": ["prepare"],
            "request": {"method": "POST", "url": url, "json": {"n": "{{ input.n }}"}},
            "heartbeat_timeout_seconds": HEARTBEAT_SECONDS,
            "timeout_seconds": 10,
        },
        {
            "id": "merge",
            "type": "function",
            "function": "std.echo",
            "depends_on": [*fetches, "notify"],
            "input": {
                "n": "{{ input.n }}",
                "parts": [f"{{{{ nodes.{f}.output.node }}}}" for f in fetches],
                "http": "{{ nodes.notify.output.body.n }}",
            },
            "heartbeat_timeout_seconds": HEARTBEAT_SECONDS,
        },
        *(_work(node_id, s, ["merge"]) for node_id, s in WORK_AFTER_MERGE.items()),
        _work("store", 0.2, list(WORK_AFTER_MERGE)),
        {
            "id": "done",
            "type": "function",
            "function": "std.echo",
            "depends_on": ["store"],
            "input": {
                "merged": "{{ nodes.merge.output }}",
                "stored": "{{ nodes.store.output }}",
            },
            "heartbeat_timeout_seconds": HEARTBEAT_SECONDS,
        },
    ]
    return {
        "nodes": nodes,
        "retry_policy": RETRY_POLICY,
        "output": "{{ nodes.done.output }}",
        "concurrency": {"key": "{{ input.group }}", "limit": CONCURRENCY_LIMIT},
    }


def expected_output(n: int) -> dict[str, Any]:
    return {
        "merged": {"n": n, "parts": ["fetch_a", "fetch_b", "fetch_c"], "http": n},
        "stored": {"node": "store", "n": n},
    }


#: Nodes whose body is chaos.work (each run is logged) and the HTTP node.
WORK_NODES = ("prepare", "fetch_a", "fetch_b", "fetch_c", "score", "report", "store")
HTTP_NODE = "notify"


class _Handler(BaseHTTPRequestHandler):
    server: CountingServer

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.count(self.headers.get("Idempotency-Key") or "")
        try:
            n = json.loads(body or b"{}").get("n")
        except ValueError:
            n = None
        payload = json.dumps({"ok": True, "n": n}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


class CountingServer(ThreadingHTTPServer):
    """Answers 200 JSON on 127.0.0.1 and counts requests per Idempotency-Key."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, key: str) -> None:
        with self._lock:
            self.requests[key] += 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/notify"

    def start(self) -> None:
        threading.Thread(target=self.serve_forever, name="chaos-http", daemon=True).start()
