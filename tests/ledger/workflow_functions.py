"""Workflow functions that write one ledger row for their step, then wait: the same body
transactional (its row commits only with its result) and plain (its row commits at once).

Input: `{"seconds": s, "mark": path?, "fail": bool?}`. After the row is written (not yet
committed, for the transactional one) a line `<execution> <node> <attempt>` is appended to
`mark`, so a test knows when the step is inside its sleep and may kill its worker then.
"""

from __future__ import annotations

import time
from typing import Any

from nodes.context import NodeContext
from nodes.registry import workflow_function
from tests.ledger.models import Entry
from tests.runlog import append_line


def write(input: Any, ctx: NodeContext, *, transactional: bool) -> int:
    entry = Entry.objects.create(
        execution_id=ctx.execution_id,
        node_id=ctx.node_id,
        attempt=ctx.attempt,
        transactional=transactional,
    )
    mark = input.get("mark")
    if mark:
        append_line(mark, f"{ctx.execution_id} {ctx.node_id} {ctx.attempt}")
    return entry.pk


@workflow_function("ledger.insert", transactional=True)
def insert(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """Write the row, sleep (no heartbeat: it cannot), then raise if asked to."""
    entry = write(input, ctx, transactional=True)
    time.sleep(float(input.get("seconds", 0)))
    if input.get("fail"):
        raise RuntimeError("failed after writing its row")
    return {"node": ctx.node_id, "entry": entry}


@workflow_function("ledger.insert_plain")
def insert_plain(input: Any, ctx: NodeContext) -> dict[str, Any]:
    """The same step as a plain function: its row is committed before its result."""
    entry = write(input, ctx, transactional=False)
    ctx.sleep(float(input.get("seconds", 0)))
    return {"node": ctx.node_id, "entry": entry}


@workflow_function("ledger.heartbeat", transactional=True)
def heartbeat(input: Any, ctx: NodeContext) -> None:
    """A transactional function that tries to heartbeat (refused)."""
    write(input, ctx, transactional=True)
    ctx.heartbeat()
