"""The engine from the host project's own Python code: start executions and act on them.

    from workflows import api

    with transaction.atomic():
        order = Order.objects.create(...)
        run = api.start("fulfil-order", {"order": order.pk}, by=request.user)
    run.result(timeout=60)  # the output, or ExecutionFailed

Every call is the REST endpoint of the same name without the HTTP: the same services,
the same events, `by` recorded in them (a username or a user). Inside
`transaction.atomic()` a start (and every other call that writes) exists if and only if
the block commits: its rows are written in the caller's transaction and its messages
leave on commit, so no worker sees it before, and a rollback leaves nothing behind.
Errors are exceptions of this module, all deriving from WorkflowError. Each call has an
async twin with an `a` prefix (astart, aget, handle.aresult(), ...), as Django's ORM does.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, transaction
from rest_framework.exceptions import ValidationError

from executions import selectors, signals
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus
from executions.models import Execution as ExecutionRow
from executions.retention.tombstones import tombstone_of
from executions.serializers import EventSerializer, ExecutionSerializer
from executions.services import control, parking
from executions.services.keys import IdempotencyConflict as _KeyConflict
from executions.services.signals import execution_signal
from executions.services.start import execution_start
from executions.services.why import why_execution
from executions.tags import TagError, check_tags
from executions.triggers.services import event_publish, executions_of
from workflows.dsl.concurrency import ConcurrencyKeyError

T = TypeVar("T")

#: The longest pause between two reads of a waited-for execution, in seconds.
WAIT_POLL_MAX = 0.5


class WorkflowError(Exception):
    """Anything the engine refuses: the base of every error of this module."""


class UnknownWorkflow(WorkflowError, LookupError):
    """No workflow has that id or name."""


class UnknownExecution(WorkflowError, LookupError):
    """No execution has that id."""


class ExecutionPurged(UnknownExecution):
    """The execution was purged (manage.py purge_executions, or retention); `.tombstone`
    is what it left: {"id", "workflow", "version", "status", "ended_at", "purged_at",
    "events", "last_hash"}."""

    def __init__(self, tombstone: dict[str, Any]) -> None:
        self.tombstone = tombstone
        super().__init__(
            f"execution {tombstone['id']} ({tombstone['status']}) was purged at "
            f"{tombstone['purged_at']}"
        )


class UnknownNode(WorkflowError, LookupError):
    """The execution's definition has no such node (or no signal node of that name)."""


class InvalidInput(WorkflowError, ValueError):
    """An argument the engine cannot take: an input that is not JSON, a version the
    workflow does not have, a priority outside 0-9, a concurrency key it cannot render."""


class NotAllowed(WorkflowError):
    """Not allowed in the execution's current status (the REST API's 409), or not by this
    user (an approval node's approvers)."""


class IdempotencyConflict(WorkflowError):
    """The idempotency key was used before for a different start."""


class StartFailed(WorkflowError):
    """The start broke past its arguments (a stored definition that no longer parses, an
    engine error): nothing was written. The cause is chained."""


class ExecutionFailed(WorkflowError):
    """The execution ended failed or cancelled; `.execution` is its handle."""

    def __init__(self, execution: Execution) -> None:
        self.execution = execution
        super().__init__(f"execution {execution.id} {execution.status}: {_said(execution.error)}")


def _said(error: Any) -> str:
    """An execution's error in a line: its message, and the failed node's own after it."""
    if not isinstance(error, dict):
        return str(error or "no error")
    said = str(error.get("message") or error.get("type") or "no message")
    cause = error.get("cause")
    if isinstance(cause, dict) and cause.get("message"):
        said += f": {cause.get('type', 'Error')}: {cause['message']}"
    return said


@contextmanager
def _translated() -> Iterator[None]:
    """The services' exceptions as this module's."""
    try:
        yield
    except ExecutionRow.DoesNotExist:
        raise UnknownExecution("no such execution") from None
    except control.NotAnApprover as exc:
        raise NotAllowed(str(exc)) from None
    except control.NotAllowed as exc:
        raise NotAllowed(str(exc)) from None
    except control.UnknownNode as exc:
        raise UnknownNode(str(exc)) from None
    except _KeyConflict as exc:
        raise IdempotencyConflict(str(exc)) from None
    except ConcurrencyKeyError as exc:
        raise InvalidInput(f"input: {exc}") from None
    except (ValidationError, DjangoValidationError) as exc:
        detail = _fields(exc)
        text = "; ".join(f"{field}: {' '.join(map(str, msgs))}" for field, msgs in detail.items())
        raise (UnknownWorkflow if "workflow" in detail else InvalidInput)(text) from None


def _fields(exc: ValidationError | DjangoValidationError) -> dict[str, Any]:
    """{field: [messages]} of either framework's ValidationError."""
    if isinstance(exc, ValidationError):
        return exc.detail if isinstance(exc.detail, dict) else {"input": exc.detail}
    if hasattr(exc, "error_dict"):
        return exc.message_dict
    return {"input": exc.messages}


def _username(by: Any) -> str:
    """A user (anything with get_username), a username, or None (recorded as "")."""
    if by is None:
        return ""
    if hasattr(by, "get_username"):
        return str(by.get_username())
    return str(by)


def _check_key(idempotency_key: Any) -> None:
    if idempotency_key is not None and not (isinstance(idempotency_key, str) and idempotency_key):
        raise InvalidInput("idempotency_key must be a non-empty string")


def _check_json(name: str, value: Any) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{name} must be JSON (dicts, lists, strings, numbers): {exc}") from None


class Execution:
    """An execution as the REST API shows it (`.data`), read when made and again on
    `refresh()`; its methods act on it as the endpoints of the same names do."""

    def __init__(self, row: ExecutionRow) -> None:
        self._load(row)

    def _load(self, row: ExecutionRow) -> None:
        self._row = row
        self.data: dict[str, Any] = dict(ExecutionSerializer(row).data)

    def __repr__(self) -> str:
        return f"<Execution {self.id} {self.status}>"

    @property
    def id(self) -> uuid.UUID:
        return self._row.pk

    @property
    def status(self) -> str:
        return str(self.data["status"])

    @property
    def output(self) -> Any:
        return self.data["output"]

    @property
    def error(self) -> Any:
        return self.data["error"]

    @property
    def tags(self) -> dict[str, str]:
        return dict(self.data["tags"])

    @property
    def ended(self) -> bool:
        return self.status in EXECUTION_TERMINAL

    def refresh(self) -> Execution:
        with _translated():
            self._load(_row(self.id))
        return self

    def wait(self, timeout: float | None = None) -> Execution:
        """Until the execution ends (TimeoutError past `timeout` seconds)."""
        pause = _waits(self, timeout)
        while (delay := next(pause)) is not None:
            time.sleep(delay)
        return self

    def result(self, timeout: float | None = None) -> Any:
        """wait(), then the output; ExecutionFailed if it ended failed or cancelled."""
        return _outcome(self.wait(timeout))

    def cancel(self, *, by: Any = None) -> Execution:
        return self._act(control.execution_cancel, by=by)

    def pause(self, *, by: Any = None) -> Execution:
        return self._act(control.execution_pause, by=by)

    def resume(self, *, by: Any = None) -> Execution:
        return self._act(control.execution_resume, by=by)

    def retry(
        self, node_id: str | None = None, *, by: Any = None, idempotency_key: str | None = None
    ) -> Execution:
        """Run the failed nodes again (`node_id`: that one). A repeat with the same
        `idempotency_key` retries nothing more; the key used for anything else raises
        IdempotencyConflict."""
        _check_key(idempotency_key)
        return self._act(
            control.execution_retry, node_id=node_id, by=by, idempotency_key=idempotency_key
        )

    def signal(self, name: str, data: Any = None, *, by: Any = None) -> Execution:
        _check_json("data", data)
        return self._act(execution_signal, name=name, data=data, by=by)

    def approve(self, node_id: str, data: Any = None, *, by: Any = None) -> Execution:
        _check_json("data", data)
        return self._act(control.signal_send, node_id=node_id, decision="approve", data=data, by=by)

    def reject(self, node_id: str, data: Any = None, *, by: Any = None) -> Execution:
        _check_json("data", data)
        return self._act(control.signal_send, node_id=node_id, decision="reject", data=data, by=by)

    def retry_task(self, node_id: str, *, by: Any = None) -> Execution:
        """A parked node (on_exhausted "park") gets another round of attempts."""
        return self._act(parking.parked_task_retry, node_id=node_id, by=by)

    def fail_task(self, node_id: str, *, by: Any = None) -> Execution:
        """A parked node fails as it would have without parking."""
        return self._act(parking.parked_task_fail, node_id=node_id, by=by)

    def events(self, after_seq: int = 0) -> list[dict[str, Any]]:
        """The log after `after_seq`, as GET .../events shows it."""
        rows = selectors.event_list(execution=self._row, after_seq=after_seq)
        return [dict(event) for event in EventSerializer(rows, many=True).data]

    def why(self) -> list[dict[str, Any]]:
        """For every node not settled, why (GET .../why)."""
        with _translated():
            return why_execution(_row(self.id))

    def _act(self, service: Callable[..., Any], *, by: Any, **kwargs: Any) -> Execution:
        try:
            with _translated():
                service(execution_id=self.id, by=_username(by), **kwargs)
        except UnknownExecution:
            self.refresh()  # ExecutionPurged where it was purged since
            raise
        return self.refresh()

    # --- the async twins ---------------------------------------------------------

    async def arefresh(self) -> Execution:
        return await sync_to_async(self.refresh)()

    async def await_(self, timeout: float | None = None) -> Execution:
        """wait()'s twin, without blocking the event loop (`await` is Python's keyword)."""
        pause = await sync_to_async(_waits)(self, timeout)
        while (delay := await sync_to_async(next)(pause)) is not None:
            await asyncio.sleep(delay)
        return self

    async def aresult(self, timeout: float | None = None) -> Any:
        return _outcome(await self.await_(timeout))

    async def acancel(self, *, by: Any = None) -> Execution:
        return await sync_to_async(self.cancel)(by=by)

    async def apause(self, *, by: Any = None) -> Execution:
        return await sync_to_async(self.pause)(by=by)

    async def aresume(self, *, by: Any = None) -> Execution:
        return await sync_to_async(self.resume)(by=by)

    async def aretry(
        self, node_id: str | None = None, *, by: Any = None, idempotency_key: str | None = None
    ) -> Execution:
        return await sync_to_async(self.retry)(node_id, by=by, idempotency_key=idempotency_key)

    async def asignal(self, name: str, data: Any = None, *, by: Any = None) -> Execution:
        return await sync_to_async(self.signal)(name, data, by=by)

    async def aapprove(self, node_id: str, data: Any = None, *, by: Any = None) -> Execution:
        return await sync_to_async(self.approve)(node_id, data, by=by)

    async def areject(self, node_id: str, data: Any = None, *, by: Any = None) -> Execution:
        return await sync_to_async(self.reject)(node_id, data, by=by)

    async def aretry_task(self, node_id: str, *, by: Any = None) -> Execution:
        return await sync_to_async(self.retry_task)(node_id, by=by)

    async def afail_task(self, node_id: str, *, by: Any = None) -> Execution:
        return await sync_to_async(self.fail_task)(node_id, by=by)

    async def aevents(self, after_seq: int = 0) -> list[dict[str, Any]]:
        return await sync_to_async(self.events)(after_seq)

    async def awhy(self) -> list[dict[str, Any]]:
        return await sync_to_async(self.why)()


def _row(execution_id: Any) -> ExecutionRow:
    try:
        pk = execution_id if isinstance(execution_id, uuid.UUID) else uuid.UUID(str(execution_id))
    except ValueError:
        raise UnknownExecution(f"{execution_id!r} is not an execution id") from None
    found = ExecutionRow.objects.select_related("workflow", "version").filter(pk=pk).first()
    if found is None:
        tombstone = tombstone_of(pk)
        if tombstone is not None:
            raise ExecutionPurged(tombstone.as_body())
        raise UnknownExecution(f"no execution {pk}")
    return found


def _waits(handle: Execution, timeout: float | None) -> Iterator[float | None]:
    """The pauses of a wait: each next() reads the execution again and yields how long to
    sleep before the next read, or None once it has ended."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.02
    while True:
        if handle.refresh().ended:
            yield None
            return
        if transaction.get_connection().in_atomic_block:
            raise WorkflowError(
                "wait() inside transaction.atomic(): the workers cannot see what this "
                "transaction wrote until it commits, so the execution could never end "
                "here; wait after the block"
            )
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"execution {handle.id} still {handle.status} after {timeout}s")
        left = WAIT_POLL_MAX if deadline is None else max(deadline - time.monotonic(), 0.0)
        yield min(delay, left)
        delay = min(delay * 2, WAIT_POLL_MAX)


def _outcome(handle: Execution) -> Any:
    if handle.status != ExecutionStatus.SUCCEEDED:
        raise ExecutionFailed(handle)
    return handle.output


def start(
    workflow: str | int,
    input: Any = None,
    *,
    version: int | None = None,
    idempotency_key: str | None = None,
    priority: int = 0,
    start_at: datetime | None = None,
    tags: dict[str, str] | None = None,
    by: Any = None,
) -> Execution:
    """Start an execution of `workflow` (its name or id) at its latest version, or
    `version`. A repeat with the same `idempotency_key` returns the first execution. A
    start that cannot start raises, and writes nothing."""
    _check_json("input", input)
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 9:
        raise InvalidInput(f"priority must be an integer from 0 to 9, not {priority!r}")
    if start_at is not None and (not isinstance(start_at, datetime) or start_at.tzinfo is None):
        raise InvalidInput("start_at must be a timezone-aware datetime")
    try:
        checked = check_tags(tags)
    except TagError as exc:
        raise InvalidInput(f"tags: {exc}") from None
    _check_key(idempotency_key)
    try:
        with _translated(), transaction.atomic():
            found = selectors.version_named(workflow, version)
            execution, _ = execution_start(
                version=found,
                input={} if input is None else input,
                idempotency_key=idempotency_key,
                start_at=start_at,
                by=_username(by),
                priority=priority,
                tags=checked,
                key_errors=True,
                raise_errors=True,
            )
    except (WorkflowError, DatabaseError):
        raise
    except Exception as exc:
        raise StartFailed(f"could not start {workflow!r}: {type(exc).__name__}: {exc}") from exc
    return Execution(execution)


def get(execution_id: uuid.UUID | str) -> Execution:
    """The handle of an existing execution (UnknownExecution if there is none)."""
    with _translated():
        return Execution(_row(execution_id))


def publish_event(
    key: str, data: Any = None, *, idempotency_key: str | None = None, by: Any = None
) -> list[Execution]:
    """Publish an event: every enabled trigger on `key` whose filter holds starts its
    workflow. A repeat with the same `idempotency_key` starts nothing new."""
    if not isinstance(key, str) or not key:
        raise InvalidInput("key must be a non-empty string")
    _check_json("data", data)
    with _translated():
        event = event_publish(key=key, data=data, idempotency_key=idempotency_key, by=_username(by))
        return [get(execution_id) for execution_id in executions_of(event)]


astart = sync_to_async(start)
aget = sync_to_async(get)
apublish_event = sync_to_async(publish_event)

# The handle execution_finished's receivers get (executions/signals.py).
signals.handle_factory = get
