"""Tracing with the `otel` extra (config/tracing.py), through the worker runtime in process
against the real database, recorded by the SDK's in-memory exporter: one trace per
execution (its id is the execution's UUID), one span per attempt with the execution, node
and attempt as attributes, an error status on a failed attempt, and `traceparent` on an
HTTP node's request naming that attempt's span. Without the extra, nothing breaks."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from executions.models import Attempt, AttemptStatus, Execution
from executions.services.attempts import attempt_claim
from executions.worker.runtime import run_claimed
from nodes import tracing
from tests.factories import start
from tests.servers import http_server

pytestmark = pytest.mark.django_db(transaction=True)  # the lease keeper's thread must see rows

WORKER = "tracing-test:1:1"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure(provider)
    try:
        yield exporter
    finally:
        tracing.configure(None)
        provider.shutdown()


def run_everything(execution: Execution) -> int:
    """Claim and run the execution's scheduled attempts in this process until none is left."""
    ran = 0
    while True:
        waiting = Attempt.objects.filter(execution=execution, status=AttemptStatus.SCHEDULED)
        attempt = waiting.order_by("pk").first()
        if attempt is None:
            return ran
        claimed = attempt_claim(attempt_id=attempt.pk, worker_id=WORKER)
        assert claimed is not None
        run_claimed(claimed, WORKER, claim_next=False)
        ran += 1


def test_a_trace_per_execution_a_span_per_attempt_and_traceparent(spans, settings) -> None:
    settings.WORKFLOW_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    with http_server(lambda request, seen: (200, {"ok": True})) as server:
        call = {"method": "POST", "url": f"{server.url}/hook", "json": {}}
        boom = {"message": "nope", "retryable": False}
        nodes = [
            {"id": "call", "type": "http", "request": call},
            {"id": "boom", "type": "function", "function": "std.fail", "depends_on": ["call"],
             "input": boom},
        ]  # fmt: skip
        execution = start({"nodes": nodes})
        assert run_everything(execution) == 2
    execution.refresh_from_db()
    assert execution.status == "failed"

    finished = {span.attributes["workflow.node_id"]: span for span in spans.get_finished_spans()}
    assert set(finished) == {"call", "boom"}
    trace_id = uuid.UUID(str(execution.pk)).int
    for node_id, node_type in (("call", "http"), ("boom", "function")):
        span = finished[node_id]
        assert span.context.trace_id == trace_id
        assert span.name == f"{node_type} {node_id}"
        assert dict(span.attributes) == {
            "workflow.execution_id": str(execution.pk),
            "workflow.node_id": node_id,
            "workflow.node_type": node_type,
            "workflow.attempt": 1,
            "workflow.worker": WORKER,
            **({"workflow.error_type": "std.fail"} if node_id == "boom" else {}),
        }
    # Both attempts hang off the same (virtual) execution span: one trace, siblings.
    assert finished["call"].parent.span_id == finished["boom"].parent.span_id
    assert finished["call"].status.status_code == StatusCode.UNSET
    assert finished["boom"].status.status_code == StatusCode.ERROR
    assert finished["boom"].status.description == "nope"

    (request,) = server.seen
    traceparent = {k.lower(): v for k, v in request.headers.items()}["traceparent"]
    sent = finished["call"].context
    assert traceparent == f"00-{sent.trace_id:032x}-{sent.span_id:016x}-01"


def test_without_the_extra_tracing_does_nothing(monkeypatch) -> None:
    """config/tracing.py imported where OpenTelemetry is not installed."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import fails, as when absent
    spec = importlib.util.spec_from_file_location("tracing_without_otel", tracing.__file__)
    assert spec is not None
    assert spec.loader is not None
    bare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bare)
    assert not bare.available()
    headers = {"Idempotency-Key": "k"}
    with bare.attempt_span(
        execution_id=str(uuid.uuid4()), node_id="n", node_type="http", attempt=1, worker="w"
    ):
        bare.inject(headers)
        bare.attempt_failed({"type": "X", "message": "y"})
    assert headers == {"Idempotency-Key": "k"}
    bare.configure(exporter="otlp")  # nothing to configure: no error either
