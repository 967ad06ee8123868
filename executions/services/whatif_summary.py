"""The what-if gate of sync_workflows: a definition about to become a workflow's next
version, replayed over the latest executions of the version it replaces, before it is
stored, and summed up in a line.

Reads only. Each replay is the what-if replay of POST /executions/{id}/replay with
`dry_run` (executions/services/whatif.py), with the candidate in place of a stored
version."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.core.exceptions import ValidationError

from executions.engine.counterfactual import Report
from executions.models import Execution
from executions.services.whatif import candidate_report
from workflows.dsl import Definition
from workflows.models import WorkflowVersion

#: How many of the replaced version's latest executions are replayed by default.
LATEST = 20


@dataclass(frozen=True)
class WhatIf:
    #: The version the candidate replaces, whose executions were replayed.
    version: int
    replayed: int
    #: Where the diverging executions part from their log: a node id (or, for a decision
    #: about the whole execution, its event type) with how many part there.
    diverging: tuple[tuple[str, int], ...]
    #: Executions the candidate could not be decided against, with the first reason.
    unreplayable: int = 0
    first_problem: str = ""

    @property
    def diverge(self) -> int:
        return sum(count for _, count in self.diverging)

    def __str__(self) -> str:
        if not self.replayed:
            return f"what-if: no executions of version {self.version} to replay"
        plural = "" if self.replayed == 1 else "s"
        head = (
            f"what-if over the latest {self.replayed} execution{plural} of version {self.version}: "
        )
        if self.unreplayable == self.replayed:
            return f"{head}none could be replayed ({self.first_problem})"
        if not self.diverging:
            body = "none would diverge"
        else:
            where = ", ".join(f"{count} at {place}" for place, count in self.diverging)
            body = f"{self.diverge} of {self.replayed} would diverge ({where})"
        if self.unreplayable:
            body += f"; {self.unreplayable} could not be replayed ({self.first_problem})"
        return head + body


def what_if(*, replaced: WorkflowVersion, candidate: Definition, last: int = LATEST) -> WhatIf:
    """The candidate replayed over the `last` latest executions of `replaced`."""
    executions = Execution.objects.filter(version=replaced).order_by("-created_at", "-pk")[:last]
    places: Counter[str] = Counter()
    replayed = unreplayable = 0
    first_problem = ""
    for execution in executions:
        replayed += 1
        try:
            report = candidate_report(execution=execution, candidate=candidate)
        except ValidationError as exc:
            unreplayable += 1
            first_problem = first_problem or "; ".join(exc.messages)
            continue
        if report.diverges_at is not None:
            places[divergence_place(report)] += 1
    return WhatIf(
        version=replaced.version,
        replayed=replayed,
        diverging=tuple(sorted(places.items(), key=lambda item: (-item[1], item[0]))),
        unreplayable=unreplayable,
        first_problem=first_problem,
    )


def divergence_place(report: Report) -> str:
    """The node at which a replay parts from its log: the node of the decision the new
    definition would take there, else of the one the log recorded."""
    at = [pair for pair in report.decisions if pair["seq"] == report.diverges_at]
    for pair in at or [pair for pair in report.decisions if not pair["same"]]:
        for side in (pair["would_decide"], pair["recorded"]):
            if side and side["node_id"]:
                return f"node {side['node_id']}"
        shown = pair["would_decide"] or pair["recorded"]
        if shown:
            return str(shown["type"])
    return f"seq {report.diverges_at}"
