"""Event payloads as types, and the one codec between them and the stored JSON.

Every event type that carries data has a frozen dataclass here; `ErrorRecord`
(engine/errors.py) is the error every result, failure and engine error records.
`to_json(payload)` gives exactly the dict the log stores (and the hash chain covers);
`from_json(event_type, data)` reads it back. Decided for keys this engine does not
know (written by a newer or older version, or by a shell that adds context such as `by`):
they are KEPT, in `extra` (and in an error's `details`), and written back unchanged, so
decoding and encoding a stored payload gives it back as it was. A field marked optional
is left out of the JSON while it is None; the others are always written (an output of
null is an output).

Pure Python: no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from types import MappingProxyType
from typing import Any, TypeVar

from executions.engine.errors import ErrorRecord
from executions.engine.events import Decision, EventType
from executions.engine.fastinit import encoder, install

JSON = Any
_OPTIONAL = {"optional": True}
_ERROR = {"error": True}
_OPTIONAL_ERROR = {"optional": True, "error": True}


@dataclass(frozen=True, kw_only=True)
class Payload:
    #: Stored keys this engine does not know: kept, and written back as they were.
    extra: Mapping[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkflowStarted(Payload):
    input: JSON = None
    workflow: str | None = field(default=None, metadata=_OPTIONAL)
    version: int | None = field(default=None, metadata=_OPTIONAL)
    replay_of: str | None = None
    by: str | None = field(default=None, metadata=_OPTIONAL)
    #: The bounds decide reads (workflows/dsl/limits.py DECISION_LIMITS) as they were at
    #: the start: in force for this execution's decisions ever after.
    limits: Mapping[str, float] | None = field(default=None, metadata=_OPTIONAL)
    #: Fault injection (engine/faults.py): {"duplicate_delivery", "crash_after_effect",
    #: "delay_result_seconds", "seed"}; absent for every other execution.
    faults: Mapping[str, Any] | None = field(default=None, metadata=_OPTIONAL)
    #: When the definition's timeout_seconds (or a parent's deadline, if sooner) ends it.
    deadline_at: str | None = field(default=None, metadata=_OPTIONAL)
    #: The client's tags, inherited by children.
    tags: Mapping[str, str] | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TaskScheduled(Payload):
    input: JSON = None
    #: The node's kind (workflows/kinds/): what fold makes of the scheduling.
    type: str | None = field(default=None, metadata=_OPTIONAL)
    #: Set on a retry's scheduling.
    retry: bool | None = field(default=None, metadata=_OPTIONAL)
    #: A waiting kind's deadline (approval, signal with timeout_seconds): a timeout timer
    #: fires then (engine/waits.py).
    timeout_at: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TaskStarted(Payload):
    worker: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TaskRateLimited(Payload):
    #: The rate limit's bucket: "key:" and the rendered key, or "node:" and the workflow
    #: id and node id (without a key).
    key: str = ""
    #: When its token was due, as the bucket stood at the claim (ISO 8601).
    until: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TaskCompleted(Payload):
    output: JSON = None
    #: A replay's reused result: the execution it was recorded in.
    reused_from: str | None = field(default=None, metadata=_OPTIONAL)
    #: True: recorded in the transaction that committed the function's own database
    #: writes (a transactional function); absent otherwise.
    transactional: bool | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TaskFailed(Payload):
    """task_failed, and task_timed_out (the same shape)."""

    error: ErrorRecord | None = field(default=None, metadata=_OPTIONAL_ERROR)
    #: True: a transactional function's failure, recorded as its writes rolled back.
    transactional: bool | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TaskRetryScheduled(Payload):
    delay_seconds: float = 0.0
    due_at: str | None = None
    next_attempt: int = 0
    error_type: str | None = None


@dataclass(frozen=True, kw_only=True)
class Reason(Payload):
    """task_skipped, task_cancelled, workflow_cancelled: why."""

    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class TimerStarted(Payload):
    #: {"seconds" or "until", "due_at"}: what the delay node waits for.
    input: JSON = None


@dataclass(frozen=True, kw_only=True)
class TimerFired(Payload):
    #: "retry" for a retry's backoff timer, "deadline" for the execution's timeout (no
    #: node); a delay node's otherwise.
    kind: str | None = field(default=None, metadata=_OPTIONAL)
    due_at: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class SignalReceived(Payload):
    """An approval's answer (node_id set, `decision`), or a named signal: sent to the
    execution (no node_id, `name`), then delivered to the node that waits for it."""

    decision: str | None = None
    data: JSON = None
    comment: str | None = None
    by: str | None = None
    name: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class ApprovalTimedOut(Payload):
    #: "reject", "approve" or "fail": what the node's on_timeout made of the silence.
    on_timeout: str | None = None
    timeout_seconds: float | None = None


@dataclass(frozen=True, kw_only=True)
class WorkflowTimedOut(Payload):
    #: The deadline that passed (workflow_started's).
    deadline_at: str | None = None
    #: The definition's timeout_seconds, if it has one (the deadline may be a parent's).
    timeout_seconds: float | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class ChildWorkflowStarted(Payload):
    child_execution_id: str | None = None
    workflow: str | None = None
    version: int | None = None


@dataclass(frozen=True, kw_only=True)
class CompensationScheduled(Payload):
    task: str | None = None


@dataclass(frozen=True, kw_only=True)
class RetryRequested(Payload):
    nodes: Sequence[str] = ()
    by: str | None = field(default=None, metadata=_OPTIONAL)
    node_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class CancelRequested(Payload):
    by: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class PauseToggled(Payload):
    """workflow_paused, workflow_resumed: who asked."""

    by: str | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class EngineErrorFact(Payload):
    error: ErrorRecord | None = field(default=None, metadata=_OPTIONAL_ERROR)


@dataclass(frozen=True, kw_only=True)
class FaultInjected(Payload):
    #: duplicate_delivery, crash_after_effect or delay_result.
    fault: str = ""
    seed: int = 0
    #: The probability that decided it (duplicate_delivery, crash_after_effect).
    probability: float | None = field(default=None, metadata=_OPTIONAL)
    #: How much later the result is recorded (delay_result).
    seconds: float | None = field(default=None, metadata=_OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class WorkflowCompleted(Payload):
    output: JSON = None


@dataclass(frozen=True, kw_only=True)
class WorkflowFailed(Payload):
    error: ErrorRecord | None = field(default=None, metadata=_ERROR)


@dataclass(frozen=True, kw_only=True)
class TaskParked(Payload):
    #: Attempts in the round that ran out (since the start or the last operator retry).
    attempts: int = 0
    #: The type of the last attempt's error (its error stays on the node).
    error_type: str | None = None


@dataclass(frozen=True, kw_only=True)
class TaskUnparked(Payload):
    #: "retry": another round of attempts; "fail": the node fails as exhaustion would have.
    action: str = ""
    #: The operator who answered.
    by: str | None = field(default=None, metadata=_OPTIONAL)


#: Each event type's payload class: the one table the codec reads.
PAYLOADS: Mapping[EventType, type[Payload]] = {
    EventType.WORKFLOW_STARTED: WorkflowStarted,
    EventType.TASK_SCHEDULED: TaskScheduled,
    EventType.TASK_STARTED: TaskStarted,
    EventType.TASK_COMPLETED: TaskCompleted,
    EventType.TASK_FAILED: TaskFailed,
    EventType.TASK_TIMED_OUT: TaskFailed,
    EventType.TASK_RETRY_SCHEDULED: TaskRetryScheduled,
    EventType.TASK_SKIPPED: Reason,
    EventType.TASK_CANCELLED: Reason,
    EventType.TIMER_STARTED: TimerStarted,
    EventType.TIMER_FIRED: TimerFired,
    EventType.SIGNAL_RECEIVED: SignalReceived,
    EventType.CHILD_WORKFLOW_STARTED: ChildWorkflowStarted,
    EventType.COMPENSATION_SCHEDULED: CompensationScheduled,
    EventType.RETRY_REQUESTED: RetryRequested,
    EventType.WORKFLOW_CANCEL_REQUESTED: CancelRequested,
    EventType.WORKFLOW_PAUSED: PauseToggled,
    EventType.WORKFLOW_RESUMED: PauseToggled,
    EventType.WORKFLOW_COMPLETED: WorkflowCompleted,
    EventType.WORKFLOW_FAILED: WorkflowFailed,
    EventType.WORKFLOW_CANCELLED: Reason,
    EventType.ENGINE_ERROR: EngineErrorFact,
    EventType.FAULT_INJECTED: FaultInjected,
    EventType.APPROVAL_TIMED_OUT: ApprovalTimedOut,
    EventType.WORKFLOW_TIMED_OUT: WorkflowTimedOut,
    EventType.TASK_PARKED: TaskParked,
    EventType.TASK_UNPARKED: TaskUnparked,
    EventType.TASK_RATE_LIMITED: TaskRateLimited,
}

_CLASSES: set[type[Payload]] = {Payload, *PAYLOADS.values()}
for _cls in _CLASSES:
    install(_cls)

P = TypeVar("P", bound=Payload)


@dataclass(frozen=True)
class _Plan:
    """What the codec needs to know of a payload class, worked out once per class."""

    #: (name, optional, error) per known field, in declared order.
    known: tuple[tuple[str, bool, bool], ...]
    names: frozenset[str]
    errors: tuple[str, ...]
    #: Every field's default, and for `extra` a shared, read-only empty mapping (no
    #: other field may have a default factory: decode shares the defaults).
    defaults: Mapping[str, JSON]


def _plan(cls: type[Payload]) -> _Plan:
    known, defaults = [], {}
    for f in fields(cls):
        if f.name == "extra":
            continue
        if f.default is MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: payload fields need a plain default")
        defaults[f.name] = f.default
        known.append((f.name, bool(f.metadata.get("optional")), bool(f.metadata.get("error"))))
    defaults["extra"] = _NOTHING
    plan = _PLANS[cls] = _Plan(
        known=tuple(known),
        names=frozenset(name for name, _, _ in known),
        errors=tuple(name for name, _, error in known if error),
        defaults=defaults,
    )
    return plan


_NOTHING: Mapping[str, JSON] = MappingProxyType({})
_PLANS: dict[type[Payload], _Plan] = {}
_ENCODERS: dict[type[Payload], Callable[[Payload], tuple[dict[str, JSON], bool]]] = {}


def plan_of(cls: type[Payload]) -> _Plan:
    """The codec's plan of a payload class (engine/readers.py reads single fields by it)."""
    return _PLANS.get(cls) or _plan(cls)


def to_json(payload: Payload) -> dict[str, JSON]:
    """The stored form: known fields in declared order, then the kept unknown keys."""
    return _encode(payload)[0]


def _encode(payload: Payload) -> tuple[dict[str, JSON], bool]:
    """to_json, and whether decoding it gives back `payload` field for field (no error
    record turned into JSON, no kept key that could shadow a known one)."""
    # One generated encoder per class (engine/fastinit.py): the plan's loop, unrolled.
    encode = _ENCODERS.get(type(payload))
    if encode is None:
        cls = type(payload)
        encode = _ENCODERS[cls] = encoder(cls, plan_of(cls).known, ErrorRecord)
    return encode(payload)


def decode(cls: type[P], data: Mapping[str, JSON], known: object = None) -> P:
    """A payload of `cls` from stored JSON; missing keys take the field's default.
    `known`: an event's or decision's `payload`, the one decide built `data` from (the
    same values decoding gives, see `decided`): returned as it is when of this class.

    fold decodes every event it reads, so this fills the frozen instance's __dict__
    directly instead of running the dataclass __init__ (about 3x faster; the values are
    the same ones __init__ would set)."""
    if type(known) is cls:
        return known
    plan = _PLANS.get(cls) or _plan(cls)
    payload = object.__new__(cls)
    attrs = payload.__dict__
    attrs.update(plan.defaults)
    if plan.names.issuperset(data):
        attrs.update(data)
    else:
        attrs.update((k, v) for k, v in data.items() if k in plan.names)
        attrs["extra"] = {k: v for k, v in data.items() if k not in plan.names}
    for name in plan.errors:
        if attrs[name]:
            attrs[name] = _error(attrs[name])
    return payload


def _error(value: JSON) -> ErrorRecord:
    """A stored error; one that is not an object (never written by this engine) keeps
    its text as the message rather than breaking the fold of its execution."""
    if type(value) is dict or isinstance(value, Mapping):  # dict first: the ABC check is slow
        return ErrorRecord.from_json(value)
    return ErrorRecord(message=str(value))


def from_json(event_type: EventType, data: Mapping[str, JSON]) -> Payload:
    """The typed payload of a stored event; an event type without one keeps all in extra."""
    return decode(PAYLOADS.get(event_type, Payload), data)


def decided(
    event_type: EventType,
    payload: Payload,
    node_id: str | None = None,
    attempt: int | None = None,
) -> Decision:
    """A decision whose data is the payload's stored form (and which carries the payload
    when that decodes back to it: see `decode`)."""
    data, exact = _encode(payload)
    return Decision.built(event_type, node_id, attempt, data, payload if exact else None)
