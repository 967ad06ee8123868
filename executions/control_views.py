"""Operator endpoints: cancel, pause/resume, retry, replay, approve/reject, and
point-in-time state."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from executions.engine.statuses import ExecutionStatus, values
from executions.kernel.log import state_at
from executions.models import Execution
from executions.retention.tombstones import execution_or_gone
from executions.serializers import ExecutionSerializer
from executions.services import bulk, control, parking, signals, whatif, why
from workflows.conf import engine_settings
from workflows.rest.fields import (
    MAX_INT32,
    StrictBooleanField,
    StrictCharField,
    StrictDateTimeField,
    StrictIntegerField,
    StrictUUIDField,
)
from workflows.rest.openapi import CONFLICT, extend_schema, idempotency_header, query_parameter
from workflows.rest.parsers import idempotency_key, query_int
from workflows.rest.views import EngineView

RETRY_KEY = idempotency_header(
    "Repeating a retry with the same key answers as the accepted one did (202) and retries "
    "nothing; the key used for another request (another node_id or execution, a start, a "
    "replay) is a 409. A retry refused with 409 keeps no key."
)
REPLAY_KEY = idempotency_header(
    "Repeating a replay with the same key returns the execution the first one started "
    "(201) and starts nothing; the key used for another request (another body or "
    "execution, a start, a retry) is a 409. A dry run starts nothing and ignores the key."
)


class SignalSerializer(serializers.Serializer):
    # DRF's metaclass moves declared fields into _declared_fields: this does not shadow
    # Serializer.data, whatever the stubs say.
    data = serializers.JSONField(  # type: ignore[assignment]
        required=False, default=None, allow_null=True, help_text="Any JSON: the node's output."
    )
    comment = StrictCharField(required=False, default="", allow_blank=True, max_length=10_000)


class NamedSignalSerializer(serializers.Serializer):
    data = serializers.JSONField(  # type: ignore[assignment]
        required=False, default=None, allow_null=True, help_text="Any JSON: the node's output."
    )


class RetrySerializer(serializers.Serializer):
    node_id = StrictCharField(
        required=False, max_length=80, help_text="Retry this node (and its downstream) only."
    )


class ReplaySerializer(serializers.Serializer):
    from_node = StrictCharField(
        required=False, max_length=80, help_text="Run this node and its downstream again."
    )
    version = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_INT32,
        help_text="Replay the recorded history against this version of the workflow.",
    )
    input = serializers.JSONField(
        required=False, allow_null=True, help_text="Another input (null means {})."
    )
    dry_run = StrictBooleanField(
        required=False,
        default=False,
        help_text="Only report where the history would diverge (200); start nothing.",
    )


class ReplayReportSerializer(serializers.Serializer):
    """What the recorded history would have done under the other version or input."""

    diverges_at = serializers.IntegerField(
        allow_null=True, help_text="The seq of the first decision that differs; null: none."
    )
    reason = serializers.CharField(allow_null=True)
    decisions = serializers.ListField(
        child=serializers.DictField(),
        help_text='At the divergence: [{"seq", "would_decide", "recorded", "same"}].',
    )
    reused = serializers.ListField(
        child=serializers.CharField(), help_text="Nodes whose recorded outputs are reused."
    )
    would_run = serializers.ListField(
        child=serializers.CharField(), help_text="Nodes that would be decided afresh."
    )


# The services' refusals (NotAllowed: 409, UnknownNode: 404) are answered once, by the
# API's exception handler. A comment, not a docstring: a view's docstring is published in
# /schema.
class _ControlView(EngineView):
    def execution(self, execution_id) -> Execution:
        return execution_or_gone(execution_id)


class CancelView(_ControlView):
    @extend_schema(request=None, responses={202: ExecutionSerializer, 409: CONFLICT})
    def post(self, request: Request, execution_id) -> Response:
        self.execution(execution_id)
        control.execution_cancel(execution_id=execution_id, by=request.user.get_username())
        return Response(ExecutionSerializer(self.execution(execution_id)).data, status=202)


class PauseView(_ControlView):
    """pause, and with action="resume" resume: the same shape, one service each."""

    action = "pause"

    @extend_schema(request=None, responses={202: ExecutionSerializer, 409: CONFLICT})
    def post(self, request: Request, execution_id) -> Response:
        self.execution(execution_id)
        service = control.execution_pause if self.action == "pause" else control.execution_resume
        service(execution_id=execution_id, by=request.user.get_username())
        return Response(ExecutionSerializer(self.execution(execution_id)).data, status=202)


class RetryView(_ControlView):
    @extend_schema(
        request=RetrySerializer,
        parameters=[RETRY_KEY],
        responses={202: ExecutionSerializer, 409: CONFLICT},
    )
    def post(self, request: Request, execution_id) -> Response:
        self.execution(execution_id)
        body = RetrySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        control.execution_retry(
            execution_id=execution_id,
            node_id=body.validated_data.get("node_id"),
            by=request.user.get_username(),
            idempotency_key=idempotency_key(request),
        )
        return Response(ExecutionSerializer(self.execution(execution_id)).data, status=202)


class ReplayView(_ControlView):
    @extend_schema(
        request=ReplaySerializer,
        parameters=[REPLAY_KEY],
        responses={200: ReplayReportSerializer, 201: ExecutionSerializer, 409: CONFLICT},
    )
    def post(self, request: Request, execution_id) -> Response:
        execution = self.execution(execution_id)
        body = ReplaySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        extra = {"input": {} if data["input"] is None else data["input"]} if "input" in data else {}
        key = idempotency_key(request)
        if data["dry_run"]:
            number = data.get("version", execution.version.version)
            version = whatif.version_of(execution, number)
            report = whatif.replay_report(execution=execution, version=version, **extra)
            return Response(report.to_json(), status=200)
        replay = control.execution_replay(
            execution_id=execution_id,
            from_node=data.get("from_node"),
            version=data.get("version"),
            by=request.user.get_username(),
            idempotency_key=key,
            **extra,
        )
        return Response(ExecutionSerializer(replay).data, status=201)


class SignalView(_ControlView):
    decision = "approve"

    @extend_schema(request=SignalSerializer, responses={202: ExecutionSerializer, 409: CONFLICT})
    def post(self, request: Request, execution_id, node_id: str) -> Response:
        self.execution(execution_id)
        body = SignalSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        control.signal_send(
            execution_id=execution_id,
            node_id=node_id,
            decision=self.decision,
            data=body.validated_data["data"],
            comment=body.validated_data["comment"],
            by=request.user.get_username(),
        )
        return Response(ExecutionSerializer(self.execution(execution_id)).data, status=202)


class ParkedTaskView(_ControlView):
    """retry: a parked node gets another round of attempts; with action="fail" it fails as
    it would have without parking (the execution fails, compensations run)."""

    action = "retry"

    @extend_schema(request=None, responses={202: ExecutionSerializer, 409: CONFLICT})
    def post(self, request: Request, execution_id, node_id: str) -> Response:
        self.execution(execution_id)
        service = parking.parked_task_retry if self.action == "retry" else parking.parked_task_fail
        service(execution_id=execution_id, node_id=node_id, by=request.user.get_username())
        return Response(ExecutionSerializer(self.execution(execution_id)).data, status=202)


class WhyReasonSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="waiting_for_parents, condition_false, trigger_rule, retry_backoff, timer, "
        "waiting_for_approval, waiting_for_signal, waiting_for_child, concurrency_limit, "
        "pool_full, rate_limited, execution_paused, queued, running, execution_ended, "
        "upstream_failed, max_parallel, parked, workflow_timeout"
    )
    message = serializers.CharField(help_text="The reason in words.")


class WhySerializer(serializers.Serializer):
    node_id = serializers.CharField()
    status = serializers.CharField()
    reasons = WhyReasonSerializer(
        many=True, help_text="Each with its code's own fields (due_at, parents, ...)."
    )


class WhyView(_ControlView):
    """Why every node that is not settled is not running (yet)."""

    @extend_schema(responses=WhySerializer(many=True))
    def get(self, request: Request, execution_id) -> Response:
        return Response(why.why_execution(self.execution(execution_id)))


class TaskWhyView(_ControlView):
    """Why one node is not running; a settled node says why it did not run (skipped)."""

    @extend_schema(responses=WhySerializer)
    def get(self, request: Request, execution_id, node_id: str) -> Response:
        return Response(why.why_node(self.execution(execution_id), node_id))


class NamedSignalView(_ControlView):
    @extend_schema(
        request=NamedSignalSerializer, responses={202: ExecutionSerializer, 409: CONFLICT}
    )
    def post(self, request: Request, execution_id, name: str) -> Response:
        self.execution(execution_id)
        body = NamedSignalSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        signals.execution_signal(
            execution_id=execution_id,
            name=name,
            data=body.validated_data["data"],
            by=request.user.get_username(),
        )
        return Response(ExecutionSerializer(self.execution(execution_id)).data, status=202)


class StateView(_ControlView):
    @extend_schema(
        parameters=[
            query_parameter(
                "at_seq",
                "Fold this many events (default: all of them).",
                type="integer",
                minimum=0,
                maximum=MAX_INT32,
            )
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, execution_id) -> Response:
        execution = self.execution(execution_id)
        at_seq = query_int(request, "at_seq", default=execution.last_seq, maximum=MAX_INT32)
        if at_seq > execution.last_seq:
            raise ValidationError(
                {
                    "at_seq": [
                        f"the log has {execution.last_seq} events; at_seq {at_seq} is past its end"
                    ]
                }
            )
        state = state_at(execution.pk, at_seq)
        body = state.to_dict()
        body["at_seq"] = at_seq
        return Response(body)


class BulkFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=values(ExecutionStatus), required=False)
    workflow = StrictCharField(required=False, max_length=100, help_text="Its id or name.")
    created_after = StrictDateTimeField(required=False, help_text="At or after.")
    created_before = StrictDateTimeField(required=False, help_text="Before.")
    has_failed_nodes = StrictBooleanField(required=False)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise ValidationError(
                    f"Unknown filter keys {unknown}; known: {sorted(self.fields)}."
                )
        return super().to_internal_value(data)


class BulkSerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=StrictUUIDField(),
        required=False,
        max_length=engine_settings.BULK_MAX_EXECUTIONS,
        help_text="These executions (at most WORKFLOW_BULK_MAX_EXECUTIONS).",
    )
    filter = BulkFilterSerializer(
        required=False,
        help_text="The executions this matches, as GET /executions filters them (at most "
        "WORKFLOW_BULK_MAX_EXECUTIONS of them, else a 400).",
    )

    def validate(self, attrs: dict) -> dict:
        if ("ids" in attrs) == ("filter" in attrs):
            raise ValidationError("Give either ids or filter (not both, not neither).")
        return attrs


class BulkSkippedSerializer(serializers.Serializer):
    id = serializers.CharField()
    reason = serializers.CharField(help_text="No such execution, or why the action was refused.")


class BulkResultSerializer(serializers.Serializer):
    matched = serializers.IntegerField(help_text="Executions the ids or the filter found.")
    accepted = serializers.IntegerField()
    skipped = BulkSkippedSerializer(many=True)


def _bulk_request_schema() -> dict[str, Any]:
    """The body as JSON Schema: exactly one of ids and filter (a serializer cannot say so)."""
    statuses = {"type": "string", "enum": values(ExecutionStatus)}
    moment = {"type": "string", "format": "date-time"}
    filter_ = {
        "type": "object",
        "additionalProperties": False,
        "description": "The executions this matches, as GET /executions filters them.",
        "properties": {
            "status": statuses,
            "workflow": {"type": "string", "minLength": 1, "maxLength": 100},
            "created_after": moment,
            "created_before": moment,
            "has_failed_nodes": {"type": "boolean"},
        },
    }
    ids = {
        "type": "array",
        "items": {"type": "string", "format": "uuid"},
        "maxItems": engine_settings.BULK_MAX_EXECUTIONS,
    }
    return {
        "oneOf": [
            {
                "type": "object",
                "required": ["ids"],
                "properties": {"ids": ids},
                "not": {"required": ["filter"]},
            },
            {
                "type": "object",
                "required": ["filter"],
                "properties": {"filter": filter_},
                "not": {"required": ["ids"]},
            },
        ],
        "description": "ids or filter; at most WORKFLOW_BULK_MAX_EXECUTIONS executions.",
    }


class BulkView(EngineView):
    """cancel or retry, for many executions: each through its own service and transaction."""

    action = "cancel"
    #: workflows.rest.openapi: the body given as a JSON Schema is required all the same.
    request_body_required = True

    @extend_schema(
        request={"application/json": _bulk_request_schema()},
        responses={202: BulkResultSerializer},
    )
    def post(self, request: Request) -> Response:
        body = BulkSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = bulk.bulk_apply(
            self.action,
            ids=body.validated_data.get("ids"),
            filter=body.validated_data.get("filter"),
            by=request.user.get_username(),
        )
        return Response(result, status=202)
