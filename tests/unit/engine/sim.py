"""A deterministic in-memory driver for the pure core: plays workers, timers and the clock."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from executions.engine.decide import decide
from executions.engine.events import Event, EventType, Source
from executions.engine.fold import apply_event
from executions.engine.maps import fans_out
from executions.engine.state import ExecutionState
from executions.engine.statuses import EXECUTION_TERMINAL, TaskStatus
from workflows.dsl import Definition

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ACTIVE = (TaskStatus.SCHEDULED, TaskStatus.RUNNING, TaskStatus.RETRYING, TaskStatus.WAITING)


@dataclass
class Run:
    definition: Definition
    execution_id: str = "exec-1"
    #: node id -> list of outcomes per attempt: "ok", "fail", "fatal" (non-retryable).
    plan: dict[str, list[str]] = field(default_factory=dict)
    seed: int = 0
    log: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = ExecutionState(self.execution_id)
        self.rng = random.Random(self.seed)
        self.clock = T0

    def append(
        self,
        type: EventType,
        node: str | None = None,
        attempt: int | None = None,
        data: dict[str, Any] | None = None,
        source: Source = Source.WORKER,
    ) -> None:
        self.clock += timedelta(milliseconds=self.rng.randint(1, 500))
        event = Event(self.state.last_seq + 1, type, self.clock, node, attempt, data or {}, source)
        apply_event(self.state, event)
        self.log.append(event)

    def advance(self) -> None:
        for decision in decide(self.definition, self.state):
            self.append(
                decision.type, decision.node_id, decision.attempt, decision.data, Source.ENGINE
            )

    def start(self, input: Any = None) -> None:
        self.append(EventType.WORKFLOW_STARTED, data={"input": input or {}}, source=Source.API)
        self.advance()

    def outcome(self, node_id: str, attempt: int) -> str:
        outcomes = self.plan.get(node_id, [])
        return outcomes[attempt - 1] if attempt <= len(outcomes) else "ok"

    def pending_work(self) -> list[tuple[str, str]]:
        work = []
        for node_id, node in self.state.nodes.items():
            # A map node runs in the orchestrator; only its item tasks are work for "workers".
            if node.status in ACTIVE and not fans_out(self.definition.node_for(node_id)):
                work.append((node.status, node_id))
        return sorted(work)

    def step(self) -> bool:
        """Let one random thing happen in the world. False when nothing can."""
        work = self.pending_work()
        if not work:
            return False
        status, node_id = self.rng.choice(work)
        node = self.state.nodes[node_id]
        if status == TaskStatus.SCHEDULED:
            self.append(EventType.TASK_STARTED, node_id, node.attempt)
        elif status == TaskStatus.RUNNING:
            self._finish(node_id, node.attempt, node.input)
        elif status == TaskStatus.RETRYING:
            self.append(
                EventType.TIMER_FIRED, node_id, node.attempt + 1, {"kind": "retry"}, Source.TIMER
            )
        elif status == TaskStatus.WAITING:
            if self.definition.node_for(node_id).type == "approval":
                self.append(
                    EventType.SIGNAL_RECEIVED,
                    node_id,
                    node.attempt,
                    {"decision": "approve"},
                    Source.API,
                )
            else:
                self.append(
                    EventType.TIMER_FIRED, node_id, node.attempt, {"kind": "delay"}, Source.TIMER
                )
        self.advance()
        return True

    def _finish(self, node_id: str, attempt: int, input: Any) -> None:
        outcome = self.outcome(node_id, attempt)
        if outcome == "ok":
            self.append(EventType.TASK_COMPLETED, node_id, attempt, {"output": {"from": node_id}})
        else:
            error = {"type": "Boom", "message": "planned", "retryable": outcome == "fail"}
            self.append(EventType.TASK_FAILED, node_id, attempt, {"error": error})

    def run_to_end(self, input: Any = None, max_steps: int = 2000) -> ExecutionState:
        self.start(input)
        for _ in range(max_steps):
            if self.state.status in EXECUTION_TERMINAL or not self.step():
                break
        return self.state
