"""Status vocabularies (CONTRACT §3). TextChoices come from Django's enums module only,
which is plain Python and carries no settings or database dependency."""

from django.db.models.enums import TextChoices


class ExecutionStatus(TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"


class TaskStatus(TextChoices):
    PENDING = "pending"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    RETRYING = "retrying"
    WAITING = "waiting"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


EXECUTION_TERMINAL = frozenset(
    {ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED, ExecutionStatus.CANCELLED}
)
#: Statuses in which a node is doing or awaiting work that may still produce an event.
TASK_ACTIVE = frozenset(
    {TaskStatus.SCHEDULED, TaskStatus.RUNNING, TaskStatus.RETRYING, TaskStatus.WAITING}
)
TASK_DONE = frozenset({TaskStatus.SUCCEEDED, TaskStatus.SKIPPED, TaskStatus.CANCELLED})
