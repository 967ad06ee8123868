"""Test a workflow in the project's own test suite: `run` drives one execution to its end
inside the test's process and database, through the real engine (parser, fold, decide,
store, executors) with no broker, worker or beat, on a virtual clock.

    from workflows.testing import run

    def test_fulfil_order(db):
        result = run("fulfil-order", {"order": 7}, functions={"shop.charge": fake_charge})
        assert result.status == "running"          # waits for its approval
        result = result.approve("review")
        assert result.status == "succeeded"
        assert result.node("charge").attempts == 2

Delays, retry backoffs, timers and timeouts pass at once while every recorded timestamp
advances as if they had elapsed (workflows/clock.py); the driver is workflows/testing/
driver.py. An execution that waits for an approval or a signal comes back `running`, its
clock stopped, and the result's signal(), approve() and reject() go on from there;
advance() lets time run on (a wait's timeout among it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from executions import definitions as parsed_definitions
from executions import messages
from executions.models import Task
from nodes.registry import WorkflowFunction
from workflows import api, clock
from workflows.testing.definitions import NoSuchWorkflow, workflow_for
from workflows.testing.driver import Driver, Stuck

__all__ = ["NoSuchWorkflow", "NodeResult", "Result", "Stuck", "run"]


@dataclass(frozen=True)
class NodeResult:
    """One node of the execution, as its task shows it."""

    id: str
    #: The task's status (`succeeded`, `failed`, `waiting`, ...; `pending` if never reached).
    status: str
    output: Any
    error: Any
    #: How many attempts it made.
    attempts: int
    #: Its events, as GET /executions/{id}/events shows them (their `timestamp` is the
    #: virtual clock's).
    events: list[dict[str, Any]]


class Result:
    """The execution as it stands after a run (or an answer): the API's view of it, and
    the way on from a wait."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self.execution = api.get(driver.root)

    def __repr__(self) -> str:
        return f"<Result {self.id} {self.status}>"

    @property
    def id(self) -> Any:
        return self.execution.id

    @property
    def status(self) -> str:
        return self.execution.status

    @property
    def output(self) -> Any:
        return self.execution.output

    @property
    def error(self) -> Any:
        return self.execution.error

    @property
    def events(self) -> list[dict[str, Any]]:
        """The whole log, as GET /executions/{id}/events shows it."""
        return self.execution.events()

    @property
    def now(self) -> datetime:
        """Where the run's virtual clock stands."""
        with clock.shifted(self._driver.offset):
            return clock.now()

    def node(self, node_id: str) -> NodeResult:
        """The node `node_id` (a map's item as `<id>[<index>]`); LookupError if the
        execution has no such node."""
        task = Task.objects.filter(execution_id=self.id, node_id=node_id).first()
        if task is None:
            raise LookupError(f"execution {self.id} has no node {node_id!r}")
        return NodeResult(
            id=node_id,
            status=task.status,
            output=task.output,
            error=task.error,
            attempts=task.attempts,
            events=[event for event in self.events if event.get("node_id") == node_id],
        )

    def signal(self, name: str, data: Any = None) -> Result:
        """Send the signal `name`, then run on to the next wait or the end. Sent to the
        execution, else to the first of its sub-workflows' executions that waits for it."""
        return self._answer(lambda handle: handle.signal(name, data, by=BY))

    def approve(self, node_id: str, data: Any = None) -> Result:
        """Approve the approval node `node_id` (of the execution, else of a sub-workflow's
        execution), then run on to the next wait or the end."""
        return self._answer(lambda handle: handle.approve(node_id, data, by=BY))

    def reject(self, node_id: str) -> Result:
        return self._answer(lambda handle: handle.reject(node_id, by=BY))

    def retry_task(self, node_id: str) -> Result:
        """Give the parked node `node_id` another round of attempts, then run on."""
        return self._answer(lambda handle: handle.retry_task(node_id, by=BY))

    def fail_task(self, node_id: str) -> Result:
        """Fail the parked node `node_id` as it would have failed unparked, then run on."""
        return self._answer(lambda handle: handle.fail_task(node_id, by=BY))

    def advance(self, seconds: float) -> Result:
        """Let `seconds` pass on the run's clock, firing what falls due meanwhile (a
        wait's timeout too), then run on to the next wait or the end."""
        with self._driver.driving():
            self._driver.settle(until=clock.now() + timedelta(seconds=seconds))
            self._driver.settle()
        return self._refreshed()

    def _answer(self, act: Callable[[api.Execution], object]) -> Result:
        with self._driver.driving():
            _to_the_waiting(self._driver.running(), act)
            self._driver.settle()
        return self._refreshed()

    def _refreshed(self) -> Result:
        self.execution.refresh()
        return self


def _to_the_waiting(executions: list[str], act: Callable[[api.Execution], object]) -> None:
    """`act` on the first of `executions` that takes it (the root first: a wait inside a
    sub-workflow belongs to the child's execution); the root's refusal if none does."""
    refused: api.WorkflowError | None = None
    for execution_id in executions:
        try:
            act(api.get(execution_id))
            return
        except (api.UnknownNode, api.NotAllowed) as exc:
            refused = refused or exc
    if refused is not None:
        raise refused


#: What the harness records as the user of the answers it sends.
BY = "workflows.testing"


def run(
    workflow: str | Mapping[str, Any],
    input: Any = None,
    *,
    functions: Mapping[str, WorkflowFunction] | None = None,
) -> Result:
    """Start an execution of `workflow` and run it to its end, or to its first wait for
    an approval or a signal (status `running`).

    `workflow`: a name (the workflow of that name in the database or, where the database
    has none, the definition file `<app>/workflows/<name>.json` of an installed app, which
    is stored first, with the files of the workflows it calls) or a definition (a dict,
    stored under a name made from its content). `functions`: stand-ins, by function name,
    for this run only (`fn(input, ctx)`, as @workflow_function registers them)."""
    # Ids a rolled-back test used may come back (SQLite reuses them): nothing parsed or
    # named under one of them before may be taken for this run's.
    parsed_definitions.clear_cache()
    messages.workflow_name.cache_clear()
    driver = Driver(root="", functions=dict(functions or {}))
    with driver.driving():
        name = workflow_for(workflow)
        driver.root = str(api.start(name, input, by=BY).id)
        driver.settle()
    return Result(driver)
