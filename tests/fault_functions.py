"""A user's workflow function with a side effect, for the fault-injection tests: it writes
one ledger entry per idempotency key, however often it runs. Imported by the test process
and, through WORKFLOW_FUNCTION_MODULES, by its worker."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from nodes import workflow_function


@workflow_function("test.ledger_charge")
def ledger_charge(input: Any, ctx: Any) -> dict[str, Any]:
    ledger = Path(input["ledger"])
    with (ledger / "calls.log").open("a") as calls:  # every run, to count them
        calls.write(f"{ctx.idempotency_key} attempt {ctx.attempt}\n")
    entry = ledger / hashlib.sha256(ctx.idempotency_key.encode()).hexdigest()
    try:
        # The effect, made idempotent by the key: the first run creates the entry, any
        # repeat (a retry after a crash, a duplicate) finds it and charges nothing.
        fd = os.open(entry, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return {"charged": input["amount"], "repeat": True}
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{ctx.idempotency_key} {input['amount']}\n")
    return {"charged": input["amount"], "repeat": False}
