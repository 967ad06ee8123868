"""OpenTelemetry tracing, when the `otel` extra is installed; no-ops without it.

One trace per execution: its trace id is the execution's UUID (128 bits, as OpenTelemetry's
are), so every attempt of an execution, on whichever worker and however late, lands in the
same trace with no id to carry between processes. One span per attempt, a child of a fixed
parent derived from the execution id, with the execution, workflow, node and attempt as
attributes; a failed attempt's span has an error status. HTTP nodes send `traceparent`
(W3C Trace Context) for their attempt's span, so the called service joins the trace.

WORKFLOW_OTEL_EXPORTER = "otlp" (OTLP over HTTP: OTEL_EXPORTER_OTLP_ENDPOINT and the other
standard OTEL_* variables apply) or "console" makes the workers export spans; unset, spans
go to whatever tracer provider the process has (none: nothing is recorded, and
`traceparent` still carries the execution's trace id).

No Django here: the HTTP executor and the worker runtime both use it.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags
    from opentelemetry.trace.status import Status, StatusCode
except ImportError:  # the `otel` extra is not installed: every function here does nothing
    trace = None  # type: ignore[assignment]

#: The instrumentation scope the spans are reported under.
SCOPE = "django-replayable-workflows"
EXPORTERS = ("otlp", "console")

#: A provider of its own (tests, or configure()); None: OpenTelemetry's global one.
_provider: Any = None


def available() -> bool:
    return trace is not None


def execution_trace_id(execution_id: str) -> int:
    return uuid.UUID(str(execution_id)).int


def _execution_parent(execution_id: str) -> Any:
    """A remote parent span in the execution's trace: the same for every process."""
    digest = hashlib.sha256(f"execution:{execution_id}".encode()).digest()
    parent = SpanContext(
        trace_id=execution_trace_id(execution_id),
        span_id=int.from_bytes(digest[:8], "big") or 1,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


@contextmanager
def attempt_span(
    *, execution_id: str, node_id: str, node_type: str, attempt: int, worker: str
) -> Iterator[None]:
    """The span of one attempt, current inside the block."""
    if trace is None:
        yield
        return
    tracer = trace.get_tracer(SCOPE, tracer_provider=_provider)
    attributes: dict[str, Any] = {
        "workflow.execution_id": str(execution_id),
        "workflow.node_id": node_id,
        "workflow.node_type": node_type,
        "workflow.attempt": attempt,
        "workflow.worker": worker,
    }
    with tracer.start_as_current_span(
        f"{node_type} {node_id}",
        context=_execution_parent(execution_id),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    ):
        yield


def attempt_failed(error: dict[str, Any]) -> None:
    """Mark the current attempt's span failed, with the error's type and message."""
    if trace is None:
        return
    span = trace.get_current_span()
    span.set_attribute("workflow.error_type", str(error.get("type", "")))
    span.set_status(Status(StatusCode.ERROR, str(error.get("message", ""))[:500]))


def inject(headers: MutableMapping[str, str]) -> None:
    """Add `traceparent` (and `tracestate`) for the current span to outgoing `headers`."""
    if trace is not None:
        propagate.inject(headers)


def configure(provider: Any = None, *, exporter: str = "") -> None:
    """Use `provider` for the engine's spans; without one, set up `exporter` ("otlp" or
    "console": WORKFLOW_OTEL_EXPORTER, which the workers pass as they start), if any."""
    global _provider
    if provider is not None or trace is None:
        _provider = provider
        return
    exporter_name = exporter.strip().lower()
    if not exporter_name:
        return
    if exporter_name not in EXPORTERS:
        raise ValueError(
            f"WORKFLOW_OTEL_EXPORTER must be one of {', '.join(EXPORTERS)}, not {exporter_name!r}"
        )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        spans: Any = OTLPSpanExporter()
    else:
        spans = ConsoleSpanExporter()
    service = os.environ.get("OTEL_SERVICE_NAME", "workflow-engine")
    sdk = TracerProvider(resource=Resource.create({"service.name": service}))
    sdk.add_span_processor(BatchSpanProcessor(spans))
    _provider = sdk
