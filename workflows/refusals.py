"""The services' refusals: a request the service will not carry out now (not allowed in
the current status, no such node, not an approver, a reused idempotency key).

Plain Python, below the services: each service subclasses Refused with its own status,
and the API's exception handler (workflows.rest.errors) answers {"detail": str(exc)}
with that status, knowing none of the subclasses. No service needs the REST layer for it.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, ClassVar


class Refused(Exception):
    """A service refused; `status_code` is the HTTP status the API answers with."""

    status_code: ClassVar[int] = HTTPStatus.CONFLICT

    def body(self) -> dict[str, Any]:
        """What the API answers: {"detail": the message}, unless a refusal says more."""
        return {"detail": str(self)}
