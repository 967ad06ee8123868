"""Operator actions: cancel, pause/resume, approve/reject, retry, replay. Each appends a
fact to the log and lets the one orchestration path (advance) decide what follows."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from executions import messages
from executions.definitions import definition_for
from executions.engine import compensation
from executions.engine.events import EventType, Source
from executions.engine.maps import fans_out, item_ids
from executions.engine.payloads import (
    CancelRequested,
    PauseToggled,
    RetryRequested,
    SignalReceived,
    decided,
)
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from executions.kernel import capacity
from executions.kernel.advance import record_and_advance
from executions.kernel.lock import lock_execution, looking_after
from executions.kernel.log import load_state, state_at
from executions.models import Attempt, AttemptStatus, Execution, RetryRequest, Timer, TimerKind
from executions.services import admission, keys, whatif
from executions.services.start import execution_start
from workflows import clock
from workflows.kinds import get_kind
from workflows.kinds.approval import ApprovalSpec
from workflows.kinds.base import spec_of
from workflows.refusals import Refused


class NotAllowed(Refused):
    """The action is not allowed in the execution's (or node's) current status: HTTP 409."""


class UnknownNode(Refused):
    """No node of that id in the execution's pinned definition: HTTP 404."""

    status_code = HTTPStatus.NOT_FOUND


class NotAnApprover(PermissionDenied, Refused):
    """The approval node names its approvers and the user is not one of them: HTTP 403."""

    status_code = HTTPStatus.FORBIDDEN


def may_approve(username: str, approvers: tuple[str, ...]) -> bool:
    """Whether the user is named ("user:<username>") or in a named group ("group:<name>").
    A superuser may approve anything, as Django's own permissions let them do anything."""
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        return False
    if user.is_superuser or f"user:{username}" in approvers:
        return True
    groups = [a.removeprefix("group:") for a in approvers if a.startswith("group:")]
    return user.groups.filter(name__in=groups).exists()


def execution_cancel(*, execution_id: UUID | str, by: str = "") -> Execution:
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        if execution.status in EXECUTION_TERMINAL:
            raise NotAllowed(f"execution is already {execution.status}; nothing to cancel")
        if execution.status == ExecutionStatus.CANCELLING:
            return execution  # pressed twice: the first request is doing it
        Timer.objects.filter(
            execution=execution, kind=TimerKind.START, fired_at__isnull=True
        ).update(fired_at=clock.now())
        request = decided(EventType.WORKFLOW_CANCEL_REQUESTED, CancelRequested(by=by))
        record_and_advance(locked, [request], source=Source.API)
        return execution


def execution_pause(*, execution_id: UUID | str, by: str = "") -> Execution:
    """Hold back all new work: decide takes no decision while paused, no scheduled attempt
    is claimed and no timer fires; attempts already running finish and record results."""
    return _pause_or_resume(execution_id, by, EventType.WORKFLOW_PAUSED)


def execution_resume(*, execution_id: UUID | str, by: str = "") -> Execution:
    """Decide upon everything that happened while paused, and wake what was held back."""
    return _pause_or_resume(execution_id, by, EventType.WORKFLOW_RESUMED)


#: event -> (the status it needs, the participle its refusal says).
_PAUSING = {
    EventType.WORKFLOW_PAUSED: (ExecutionStatus.RUNNING, "paused"),
    EventType.WORKFLOW_RESUMED: (ExecutionStatus.PAUSED, "resumed"),
}


def _pause_or_resume(execution_id: UUID | str, by: str, event: EventType) -> Execution:
    needs, done = _PAUSING[event]
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        if execution.status != needs:
            raise NotAllowed(
                f"only a {needs} execution can be {done}; this one is {execution.status}"
            )
        record_and_advance(locked, [decided(event, PauseToggled(by=by))], source=Source.API)
        if event == EventType.WORKFLOW_RESUMED:
            _wake_held(execution)
        return execution


def _wake_held(execution: Execution) -> None:
    """Attempts scheduled before the pause and timers that came due during it had their
    messages refused (attempts.attempt_claim, timers.timer_fire): send them again. Those
    held by the in-flight cap or a pool are released as there is room (kernel/capacity.py)."""
    now = clock.now()
    waiting = Attempt.objects.filter(execution=execution, status=AttemptStatus.SCHEDULED)
    refused = waiting.filter(published_at__isnull=False)
    resent = list(refused.values_list("pk", "node_id", "attempt"))
    # Released anew: the sweeper's backoff counts from now, not from before the pause.
    refused.update(published_at=now, released_at=now)
    pools = {str(p) for p in waiting.filter(pool__isnull=False).values_list("pool_id", flat=True)}
    timers = list(
        Timer.objects.filter(execution=execution, fired_at__isnull=True).values_list("pk", "due_at")
    )
    outbox = messages.Outbox()
    capacity.top_up(execution, now, outbox)
    capacity.dispatch_after_commit(pools, outbox)

    def publish() -> None:
        # Named and routed by node type like every release (a type with a queue of its own
        # in WORKFLOW_NODE_QUEUES must not land in the nodes queue), each send on its own.
        capacity.publish_released(execution, resent)
        for timer_id, due_at in timers:
            messages.publish_timer(timer_id, (due_at - now).total_seconds())

    transaction.on_commit(publish)


def signal_send(
    *,
    execution_id: UUID | str,
    node_id: str,
    decision: str,
    data: Any = None,
    comment: str = "",
    by: str = "",
) -> Execution:
    """Answer a waiting approval node: decision is "approve" or "reject"."""
    with looking_after(), transaction.atomic():
        locked = lock_execution(execution_id)
        execution = locked.execution
        try:
            node = definition_for(execution.version_id).node_for(node_id)
        except KeyError:
            raise UnknownNode(f"no node '{node_id}' in this execution's definition") from None
        kind = get_kind(node.type)
        if kind is None or not kind.approvable:
            raise NotAllowed(f"node '{node_id}' is a {node.type} node, not an approval")
        approvers = spec_of(node, ApprovalSpec).approvers
        if approvers and not may_approve(by, approvers):
            raise NotAnApprover(
                f"node '{node_id}' may be approved or rejected only by "
                f"{', '.join(approvers)}; {by or 'an anonymous caller'} is none of them"
            )
        state = load_state(execution)
        current = state.node(node_id)
        if current.status != TaskStatus.WAITING or current.signal is not None:
            raise NotAllowed(f"node '{node_id}' is {current.status}, not waiting for approval")
        answer = SignalReceived(decision=decision, data=data, comment=comment, by=by)
        signal = decided(EventType.SIGNAL_RECEIVED, answer, node_id, current.attempt)
        record_and_advance(locked, [signal], source=Source.API, state=state)
        return execution


RETRYABLE_NODE = (TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.SKIPPED)


def execution_retry(
    *,
    execution_id: UUID | str,
    node_id: str | None = None,
    by: str = "",
    idempotency_key: str | None = None,
) -> Execution:
    """Run failed or cancelled nodes again, with their downstream, in the same history;
    nodes a compensation undid run again as well. An execution with a concurrency key
    runs again only if its key has room now (NotAllowed otherwise: a retry does not
    queue behind the executions that waited their turn). A repeat with the
    `idempotency_key` of a retry it accepted retries nothing and answers as the first did."""
    if idempotency_key is None:
        return _retry(execution_id, node_id, by, None)
    request = keys.fingerprint({"retry": str(execution_id), "node_id": node_id})
    try:
        return _retry(execution_id, node_id, by, (idempotency_key, request))
    except IntegrityError:
        # A retry of another execution took the key between our look and our write.
        keys.retry_by_key(idempotency_key, request)
        raise


def _retry(
    execution_id: UUID | str, node_id: str | None, by: str, key: tuple[str, str] | None
) -> Execution:
    with looking_after(), transaction.atomic():
        if key is not None and keys.retry_by_key(*key) is not None:
            return Execution.objects.get(pk=execution_id)
        _room_to_retry(execution_id)
        locked = lock_execution(execution_id)
        execution = locked.execution
        # The same retry, sent twice at once, waited for this lock: the first one won.
        if key is not None and keys.retry_by_key(*key) is not None:
            return execution
        if execution.status not in (ExecutionStatus.FAILED, ExecutionStatus.CANCELLED):
            raise NotAllowed(
                f"only a failed or cancelled execution can be retried; this one is "
                f"{execution.status}"
            )
        definition = definition_for(execution.version_id)
        state = load_state(execution)
        if node_id is not None:
            if node_id not in definition.by_id:
                raise UnknownNode(f"no node '{node_id}' in this execution's definition")
            if state.node(node_id).status not in RETRYABLE_NODE:
                raise NotAllowed(f"node '{node_id}' is {state.node(node_id).status}")
            targets = [node_id]
        else:
            targets = [
                n.id
                for n in definition.nodes
                if state.node(n.id).status in (TaskStatus.FAILED, TaskStatus.CANCELLED)
            ]
        # Undone nodes run again too (their results no longer hold), and so may their
        # compensations if this run fails in turn.
        undone = compensation.undone(definition, state)
        targets += undone
        reset = set().union(*(definition.downstream_of(t) for t in targets)) if targets else set()
        nodes = [n.id for n in definition.nodes if n.id in reset]
        nodes += [compensation.task_id(node) for node in undone]
        # A map runs all its items again: their old results belong to the old run.
        nodes += [
            item
            for n in definition.nodes
            if n.id in reset and fans_out(n)
            for item in item_ids(state, n)
        ]
        if not nodes:
            raise NotAllowed("no failed or cancelled node to retry")
        request = decided(
            EventType.RETRY_REQUESTED, RetryRequested(nodes=nodes, by=by, node_id=node_id)
        )
        if key is not None:
            # Before the events: a key another retry took raises here, with nothing written.
            RetryRequest.objects.create(
                idempotency_key=key[0],
                request_fingerprint=key[1],
                execution=execution,
                seq=execution.last_seq + 1,
                created_by=by[:150],
            )
        record_and_advance(locked, [request], source=Source.API, state=state)
        return execution


def _room_to_retry(execution_id: UUID | str) -> None:
    """Under the key's lock (taken before the execution's: services/admission.py), held
    until the retry commits, so no admission or other retry can take the same room."""
    row = (
        Execution.objects.filter(pk=execution_id)
        .values("workflow_id", "concurrency_key", "held", "status")
        .first()
    )
    retryable = (ExecutionStatus.FAILED, ExecutionStatus.CANCELLED)
    if row is None or not row["concurrency_key"] or row["status"] not in retryable:
        return  # nothing to count: the checks that follow say what is wrong, if anything
    if row["held"]:
        raise NotAllowed(
            f"execution is {row['status']} before it ever started (it waited for concurrency "
            f"key '{row['concurrency_key']}'): there is nothing to retry; replay it instead"
        )
    workflow_id, key = row["workflow_id"], row["concurrency_key"]
    admission.lock_key(workflow_id, key)
    running, waiting = admission.running_count(workflow_id, key), admission.queue(workflow_id, key)
    limit = admission.limit_of(execution_id)
    if running >= limit or waiting:
        raise NotAllowed(
            f"concurrency key '{key}' of this workflow is full ({running} of {limit} running, "
            f"{len(waiting)} waiting): retry once one of them has ended"
        )


def execution_replay(
    *,
    execution_id: UUID | str,
    from_node: str | None = None,
    version: int | None = None,
    input: Any = whatif.RECORDED,
    by: str = "",
    idempotency_key: str | None = None,
) -> Execution:
    """A new execution of the same input (or `input`) on the same pinned version (or
    `version`, see services/whatif.py: the outputs its report marks reusable are kept).
    With from_node, it and its downstream run again whatever else is kept. A repeat with
    the same `idempotency_key` returns the execution the first one started."""
    source = Execution.objects.select_related("version").get(pk=execution_id)
    target = source.version if version is None else whatif.version_of(source, version)
    definition = definition_for(target.pk)
    if from_node is not None and from_node not in definition.by_id:
        raise UnknownNode(f"no node '{from_node}' in the replayed version's definition")
    rerun = definition.downstream_of(from_node) if from_node is not None else frozenset()
    if version is not None or input is not whatif.RECORDED:
        report = whatif.replay_report(execution=source, version=target, input=input)
        outputs = report.outputs
    elif from_node is not None:
        recorded = state_at(source.pk)
        outputs = {
            node.id: recorded.node(node.id).output
            for node in definition.nodes
            if recorded.node(node.id).status == TaskStatus.SUCCEEDED
        }
    else:
        outputs = {}
    kept = {node_id: out for node_id, out in outputs.items() if node_id not in rerun}
    reused = whatif.reused_results(kept, source)
    execution, _ = execution_start(
        version=target,
        input=source.input if input is whatif.RECORDED else input,
        replay_of=source,
        reuse=reused,
        by=by,
        priority=source.priority,
        tags=source.tags,
        idempotency_key=idempotency_key,
        replay_request={"of": str(source.pk), "from_node": from_node},
    )
    return execution
