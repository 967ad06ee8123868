"""The event log and its projections.

`Event` is the source of truth and is append-only. `Execution` and `Task` are
projections written in the same transaction as the events and rebuildable from them.
`Attempt` and `Timer` are the operational rows workers and the sweeper coordinate on
(claims, leases, due times); they too follow from the events.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from executions.engine.events import RESULT_TYPES, EventType
from executions.engine.statuses import ExecutionStatus, TaskStatus, choices

# The models of the app's subpackages: Django loads an app's models from its models module.
from executions.metrics.models import MetricDelta as MetricDelta
from executions.metrics.models import MetricSeries as MetricSeries
from executions.rates.models import RateBucket as RateBucket
from executions.retention.models import Tombstone as Tombstone
from executions.schedules.models import Schedule as Schedule
from executions.schedules.models import ScheduleFire as ScheduleFire
from executions.triggers.models import PublishedEvent as PublishedEvent
from executions.triggers.models import Trigger as Trigger
from executions.triggers.models import TriggerRun as TriggerRun
from workflows import clock


class Execution(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workflow = models.ForeignKey(
        "workflows.WorkflowDefinition", on_delete=models.PROTECT, related_name="executions"
    )
    version = models.ForeignKey(
        "workflows.WorkflowVersion", on_delete=models.PROTECT, related_name="executions"
    )
    status = models.CharField(
        max_length=16, choices=choices(ExecutionStatus), default=ExecutionStatus.PENDING
    )
    input = models.JSONField(default=dict, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    #: Set when the instance is made, not at its INSERT (what auto_now_add did): a start
    #: inserts the row after deciding (services/start.py), and created_at must not come
    #: after the started_at of that decision.
    created_at = models.DateTimeField(default=clock.now, editable=False, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    replay_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replays"
    )
    parent_execution = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    #: The client's Idempotency-Key. Engine-owned starts never use this column.
    idempotency_key = models.CharField(max_length=255, null=True, blank=True, unique=True)
    #: The engine's own start key (a schedule's fire, a sub-workflow attempt): a separate
    #: namespace, so no client key can ever take or suppress an engine start.
    engine_key = models.CharField(max_length=255, null=True, blank=True, unique=True)
    #: The parent's node and attempt that started this child (with parent_execution).
    parent_node_id = models.CharField(max_length=80, blank=True, default="")
    parent_attempt = models.PositiveIntegerField(null=True, blank=True)
    #: 0 for a top-level execution, parent's depth + 1 for a child (WORKFLOW_MAX_DEPTH).
    depth = models.PositiveSmallIntegerField(default=0)
    #: Who started it: a username, or "schedule:<id>", "trigger:<name>", "parent".
    created_by = models.CharField(max_length=150, blank=True, default="")
    #: A hash of the request that used idempotency_key, to refuse a reuse with other data.
    request_fingerprint = models.CharField(max_length=64, blank=True, default="")
    #: Highest seq appended; events are numbered 1..last_seq with no gap.
    last_seq = models.PositiveIntegerField(default=0)
    #: Highest seq the orchestrator has decided upon; last_seq > decided_seq means work to do.
    decided_seq = models.PositiveIntegerField(default=0)
    #: The folded state at snapshot_seq, so advancing folds only the events after it.
    snapshot = models.JSONField(null=True, blank=True, editable=False)
    snapshot_seq = models.PositiveIntegerField(default=0)
    #: The hash of event last_seq ("" before the first): the next event chains onto it.
    last_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    #: 0 to 9, 9 first where work waits for workers: the broker's priority of its run_task
    #: messages (Redis) and the order in which the database hands out waiting work.
    priority = models.PositiveSmallIntegerField(default=0)
    #: The definition's `concurrency.key` rendered over the input ("": no concurrency
    #: limit): at most `limit` executions of the workflow with this key run at once.
    concurrency_key = models.CharField(max_length=255, blank=True, default="")
    #: Waiting for a concurrency slot: pending with no event yet, started (admitted) by
    #: services/admission.py in first-in first-out order once the key has room.
    held = models.BooleanField(default=False)
    #: What begin() records when a held execution is admitted: a replay's reused results
    #: and fault settings ({"reuse": [...], "faults": {...}}); None once admitted.
    held_start = models.JSONField(null=True, blank=True, editable=False)
    #: When it joined its key's queue (at a held start, or when its start_at came):
    #: the queue is first-in first-out by this, not by creation.
    held_at = models.DateTimeField(null=True, blank=True, editable=False)
    #: When it times out (the definition's timeout_seconds, or a parent's deadline if
    #: sooner): projected from workflow_started.
    deadline_at = models.DateTimeField(null=True, blank=True, editable=False)
    #: The client's {key: value} labels (a child's are its parent's), as workflow_started
    #: records them; GET /executions?tag= filters on them (a GIN index on PostgreSQL).
    tags = models.JSONField(default=dict, blank=True)

    #: Not a column. True on an execution begun before any of its rows was written
    #: (services/start.py): its first unit of work inserts the row and its Task rows as
    #: they were decided (kernel/projections.py), one INSERT each instead of an INSERT and an
    #: UPDATE; cleared once they are.
    tasks_unwritten: bool = False

    class Meta:
        ordering = ["-created_at"]
        permissions = [
            ("operate_execution", "Can cancel, retry, replay, pause and resume executions"),
            ("approve_task", "Can approve or reject approval tasks"),
        ]
        indexes = [
            models.Index(fields=["status", "-created_at"], name="execution_status_idx"),
            models.Index(fields=["workflow", "-created_at"], name="execution_workflow_idx"),
            # The admin's list: newest first (its -id tiebreak included), a LIMIT away.
            models.Index(fields=["-created_at", "-id"], name="execution_created_idx"),
            # Admission counts a key's running executions and reads its queue of held ones.
            models.Index(
                fields=["workflow", "concurrency_key", "status"],
                condition=~Q(concurrency_key=""),
                name="execution_concurrency_idx",
            ),
            models.Index(
                fields=["workflow", "concurrency_key", "held_at", "id"],
                condition=Q(held=True, status="pending"),
                name="execution_held_queue_idx",
            ),
            # A purge's roots, oldest end first (executions/retention/selection.py).
            models.Index(
                fields=["ended_at", "id"],
                condition=Q(
                    parent_execution__isnull=True, status__in=["cancelled", "failed", "succeeded"]
                ),
                name="execution_ended_root_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(priority__lte=9), name="execution_priority_0_to_9"),
            # One child per parent attempt, by the link itself: the engine key
            # (services/children.py) finds it again, and this holds whatever starts it.
            models.UniqueConstraint(
                fields=["parent_execution", "parent_node_id", "parent_attempt"],
                condition=Q(parent_execution__isnull=False),
                name="execution_one_child_per_attempt",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class RetryRequest(models.Model):
    """A retry accepted under a client's Idempotency-Key (POST /executions/{id}/retry): a
    repeat with the key finds it and retries nothing. A replay needs no row of its own:
    it is an execution, and keeps its key in Execution.idempotency_key."""

    idempotency_key = models.CharField(max_length=255, unique=True)
    #: A hash of the retry's execution and node_id, to refuse a reuse for another retry.
    request_fingerprint = models.CharField(max_length=64)
    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="+")
    #: The seq of the retry_requested event this request appended.
    seq = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=clock.now)
    created_by = models.CharField(max_length=150, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.idempotency_key} -> {self.execution_id}@{self.seq}"


class ConcurrencyKey(models.Model):
    """One row per (workflow, key value) ever used: admission locks it, so that counting a
    key's running executions and starting held ones happen one at a time for that key,
    whichever worker, beat or API process does it (services/admission.py)."""

    workflow = models.ForeignKey(
        "workflows.WorkflowDefinition", on_delete=models.CASCADE, related_name="+"
    )
    key = models.CharField(max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workflow", "key"], name="concurrency_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.workflow_id}:{self.key}"


class EventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise TypeError("Events are append-only: they are never updated.")

    def delete(self):
        raise TypeError("Events are append-only: they are never deleted.")


class Event(models.Model):
    id = models.BigAutoField(primary_key=True)
    execution = models.ForeignKey(Execution, on_delete=models.PROTECT, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32, choices=[(t.value, t.value) for t in EventType])
    # NULL, not "", marks an execution-level event: the stored logs, the hash chain and the
    # queries (node_id__isnull) rely on it.
    node_id = models.CharField(max_length=80, null=True, blank=True)  # noqa: DJ001
    attempt = models.PositiveIntegerField(null=True, blank=True)
    data = models.JSONField(default=dict, blank=True)
    timestamp = models.DateTimeField()
    #: Who wrote it: "engine" for orchestrator decisions (what replay --verify re-derives),
    #: "worker", "timer", "sweeper" or "api" for the facts it decides upon.
    source = models.CharField(max_length=16)
    #: hex SHA-256 over the previous event's hash and this event's canonical JSON
    #: (executions/engine/chain.py): an edit anywhere breaks every hash after it.
    hash = models.CharField(max_length=64, blank=True, default="")

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["execution_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["execution", "seq"], name="event_unique_seq"),
            # Exactly one result per attempt, however often a message or worker is duplicated.
            models.UniqueConstraint(
                fields=["execution", "node_id", "attempt"],
                condition=Q(type__in=sorted(RESULT_TYPES)),
                name="event_one_result_per_attempt",
            ),
            # One scheduling decision per attempt: two orchestrators can never both schedule.
            models.UniqueConstraint(
                fields=["execution", "node_id", "attempt"],
                condition=Q(type=EventType.TASK_SCHEDULED),
                name="event_one_schedule_per_attempt",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type} {self.node_id or ''}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise TypeError("Events are append-only: they are never updated.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("Events are append-only: they are never deleted.")


class Task(models.Model):
    """Projection: one row per node of an execution."""

    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="tasks")
    node_id = models.CharField(max_length=80)
    type = models.CharField(max_length=16)
    status = models.CharField(
        max_length=16, choices=choices(TaskStatus), default=TaskStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    retry_count = models.PositiveIntegerField(default=0)
    input = models.JSONField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    next_retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["execution_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["execution", "node_id"], name="task_unique_node")
        ]
        indexes = [
            # The admin's "has failed nodes" filter: failed tasks are few, executions many.
            models.Index(
                fields=["execution"], condition=Q(status="failed"), name="task_failed_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node_id} ({self.status})"


class AttemptStatus(models.TextChoices):
    SCHEDULED = "scheduled"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


class Attempt(models.Model):
    """One try of one node: what a worker claims, holds a lease on, and records a result for."""

    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="attempt_rows")
    node_id = models.CharField(max_length=80)
    attempt = models.PositiveIntegerField()
    status = models.CharField(
        max_length=16, choices=AttemptStatus.choices, default=AttemptStatus.SCHEDULED
    )
    worker_id = models.CharField(max_length=200, blank=True, default="")
    scheduled_at = models.DateTimeField()
    #: When its run_task message was last sent. NULL while scheduled: held, not in the
    #: broker (its pool is full or its execution has WORKFLOW_MAX_IN_FLIGHT_PER_EXECUTION
    #: messages out); executions/kernel/capacity.py publishes it when there is room.
    published_at = models.DateTimeField(null=True, blank=True)
    #: When it was released into the broker, the first of its current run of messages
    #: (at scheduling when not held; at its top-up, pool dispatch or resume when held);
    #: NULL while held, and for attempts claimed eagerly (no message at all). The
    #: sweeper's republish backoff counts from here, not from scheduled_at: an attempt
    #: held long and then lost is not made to wait as long again. NULL on rows from
    #: before the column: read as scheduled_at.
    released_at = models.DateTimeField(null=True, blank=True)
    #: The node's pool (its definition's `pool`), copied when the attempt is scheduled:
    #: the claim gate counts running attempts by it.
    pool = models.ForeignKey(
        "workflows.Pool",
        to_field="name",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="attempts",
        db_index=False,  # attempt_pool_idx below
    )
    #: The node's rate limit bucket (kernel/rates.py), set when its gate first sends the
    #: attempt back to wait: held attempts with one are released by that bucket's dispatch.
    #: NULL, not "": the partial index and the held-attempt queries skip it cheaply.
    rate_key = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    claimed_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    #: timeout_seconds from the claim: past it the attempt is timed out whatever its lease.
    deadline_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    #: What a worker needs to run it without reading the execution's state, {"input": ...},
    #: written when it is scheduled; NULL: it is claimed under the execution's lock only
    #: (a pool's gate, injected faults, a template with secrets, a child workflow).
    payload = models.JSONField(null=True, blank=True)
    #: The result event's data, while the result waits in this row for the log
    #: (`unlogged`); cleared when it is appended.
    result = models.JSONField(null=True, blank=True)
    #: A claim or a result was written here by a worker that found the execution's lock
    #: taken: the next unit of work under that lock appends it to the log (the inbox,
    #: executions/kernel/inbox.py). False once the log has what the row says.
    unlogged = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["execution", "node_id", "attempt"], name="attempt_unique"
            )
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="attempt_lease_idx"),
            models.Index(fields=["status", "scheduled_at"], name="attempt_scheduled_idx"),
            # A pool's running and waiting attempts, counted under its lock at every claim.
            models.Index(
                fields=["pool", "status"],
                condition=Q(pool__isnull=False),
                name="attempt_pool_idx",
            ),
            # The attempts waiting for a rate limit's tokens, picked at every dispatch.
            models.Index(
                fields=["rate_key", "status"],
                condition=Q(rate_key__isnull=False),
                name="attempt_rate_idx",
            ),
            # An execution's scheduled attempts, held (published_at NULL) or in the broker:
            # both counted and picked at every top-up (kernel/capacity.py), few rows each.
            models.Index(
                fields=["execution", "published_at"],
                condition=Q(status="scheduled"),
                name="attempt_waiting_idx",
            ),
            # The inbox: facts waiting for the log, read at every unit of work and by the
            # sweeper's backstop; empty but for moments.
            models.Index(
                fields=["execution"], condition=Q(unlogged=True), name="attempt_unlogged_idx"
            ),
            # The sweeper's evidence of a lost message: a peer released after it was sent
            # and already claimed (sweep._republish_lost), probed per unclaimed attempt.
            # Claimed ones only: the first entry past the stamp answers.
            models.Index(
                fields=["execution", "released_at"],
                condition=Q(released_at__isnull=False, claimed_at__isnull=False),
                name="attempt_released_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.execution_id}:{self.node_id}#{self.attempt} ({self.status})"


class TimerKind(models.TextChoices):
    DELAY = "delay"
    RETRY = "retry"
    #: A scheduled start (start_at): fires workflow_started.
    START = "start"
    #: A waiting node's timeout_seconds (approval, signal): task_scheduled's timeout_at.
    TIMEOUT = "timeout"
    #: The execution's deadline (a definition's timeout_seconds): no node.
    DEADLINE = "deadline"


class Timer(models.Model):
    """A durable due time: no worker sleeps through a delay or a retry backoff."""

    execution = models.ForeignKey(Execution, on_delete=models.CASCADE, related_name="timers")
    node_id = models.CharField(max_length=80)
    attempt = models.PositiveIntegerField()
    kind = models.CharField(max_length=8, choices=TimerKind.choices)
    due_at = models.DateTimeField()
    fired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["execution", "node_id", "attempt", "kind"], name="timer_unique"
            )
        ]
        indexes = [models.Index(fields=["fired_at", "due_at"], name="timer_due_idx")]

    def __str__(self) -> str:
        return f"{self.kind} {self.node_id}#{self.attempt} due {self.due_at:%Y-%m-%d %H:%M:%S}"


class SweeperState(models.Model):
    """When the sweeper last completed a sweep (one row per named sweeper): what /healthz,
    /metrics and the console read to say whether lease timeouts, timers, republishes and
    admission are still happening. Written at the end of every sweep, so a missing or old
    row means beat stopped sending sweeps or the workers stopped running them."""

    name = models.CharField(max_length=64, primary_key=True)
    completed_at = models.DateTimeField()
    #: Seconds the last sweep took, start to end.
    took_seconds = models.FloatField(default=0.0)
    #: The last sweep's counts (SweepReport: timed_out, timers_fired, republished, ...).
    report = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"{self.name} completed {self.completed_at:%Y-%m-%d %H:%M:%S}"
