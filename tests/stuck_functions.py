"""A workflow function that never cooperates, for the hard-limit test: it blocks without
heartbeating or checking for cancellation, like a C call or a socket without a timeout.
Imported by the test process and, through WORKFLOW_FUNCTION_MODULES, by its worker."""

from __future__ import annotations

import time
from typing import Any

from nodes.registry import workflow_function


@workflow_function("test.stuck")
def stuck(input: Any, ctx: Any) -> None:
    time.sleep(float((input or {}).get("seconds", 600)))
