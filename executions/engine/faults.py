"""Fault injection: the failures the engine is built to survive, on purpose and on replay.

An execution started with `faults` (POST /executions, only where WORKFLOW_FAULT_INJECTION=1)
carries them in its workflow_started event. Whether a fault hits an attempt is a pure
function of (seed, fault, node, attempt), so the orchestrator decides it when it schedules
the attempt, records it as a `fault_injected` decision right after the task_scheduled, and
`--verify` re-derives it like any other decision; the worker reads the same function to act:

- duplicate_delivery (probability): the attempt's message is published twice;
- crash_after_effect (probability): the function runs (its effect happens), then the
  worker drops the attempt without recording the result, as a crashed process would; the
  lease lapses, the sweeper times the attempt out and the retry policy runs it again, with
  the same idempotency key;
- delay_result_seconds (at most this many): the result is recorded that much later.

Pure: no Django.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from executions.engine.events import Decision, EventType
from executions.engine.payloads import FaultInjected, decided
from executions.engine.readers import SCHEDULED_TYPE
from executions.engine.state import ExecutionState
from workflows.kinds import WORKER_NAMES

DUPLICATE_DELIVERY = "duplicate_delivery"
CRASH_AFTER_EFFECT = "crash_after_effect"
DELAY_RESULT = "delay_result"
#: The keys of a faults object: probabilities, a bound in seconds, the seed.
PROBABILITIES = (DUPLICATE_DELIVERY, CRASH_AFTER_EFFECT)
DELAY_KEY = "delay_result_seconds"
SPEC_KEYS = (*PROBABILITIES, DELAY_KEY, "seed")


def draw(seed: int, fault: str, node_id: str, attempt: int) -> float:
    """A number in [0, 1), the same every time for the same arguments."""
    digest = hashlib.sha256(f"{seed}:{fault}:{node_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def faults_for(spec: Mapping[str, Any] | None, node_id: str, attempt: int) -> list[FaultInjected]:
    """The faults that hit this attempt, in a fixed order."""
    if not spec:
        return []
    seed = int(spec.get("seed") or 0)
    hits = []
    for fault in PROBABILITIES:
        probability = float(spec.get(fault) or 0)
        if probability > 0 and draw(seed, fault, node_id, attempt) < probability:
            hits.append(FaultInjected(fault=fault, seed=seed, probability=probability))
    bound = float(spec.get(DELAY_KEY) or 0)
    if bound > 0:
        seconds = round(bound * draw(seed, DELAY_RESULT, node_id, attempt), 3)
        hits.append(FaultInjected(fault=DELAY_RESULT, seed=seed, seconds=seconds))
    return hits


def with_faults(step: list[Decision], state: ExecutionState) -> list[Decision]:
    """`step` with each worker attempt it schedules followed by the faults that hit it.
    Without faults (every execution but a fault-injected one) `step` itself."""
    if not state.faults:
        return step
    out: list[Decision] = []
    for decision in step:
        out.append(decision)
        if decision.type != EventType.TASK_SCHEDULED or decision.attempt is None:
            continue
        if SCHEDULED_TYPE(decision.data, decision.payload) not in WORKER_NAMES:
            continue
        for fault in faults_for(state.faults, decision.node_id or "", decision.attempt):
            out.append(decided(EventType.FAULT_INJECTED, fault, decision.node_id, decision.attempt))
    return out
