"""The one place that says which Django permission each endpoint and method needs.

Routes are looked up by URL name (both the slash and no-slash forms carry it). A route
with no rule here is refused for everyone: a new endpoint is closed until it is mapped
(tests/api/test_permissions.py checks that every API route has a rule). HEAD and OPTIONS
need what GET needs. A superuser has every permission (Django's has_perm).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission

from workflows.conf import engine_settings

if TYPE_CHECKING:  # rest_framework.views imports this module through its settings
    from rest_framework.request import Request
    from rest_framework.views import APIView

VIEW_WORKFLOW = "workflows.view_workflowdefinition"
VIEW_VERSION = "workflows.view_workflowversion"
VIEW_EXECUTION = "executions.view_execution"
OPERATE = "executions.operate_execution"
APPROVE = "executions.approve_task"
VIEW_SCHEDULE = "executions.view_schedule"

#: route name -> method -> the permissions it needs (all of them).
RULES: dict[str, dict[str, tuple[str, ...]]] = {
    "workflow-list": {
        "GET": (VIEW_WORKFLOW,),
        "POST": ("workflows.add_workflowdefinition", "workflows.add_workflowversion"),
    },
    "workflow-detail": {"GET": (VIEW_WORKFLOW,)},
    "workflow-versions": {
        "GET": (VIEW_WORKFLOW, VIEW_VERSION),
        "POST": ("workflows.change_workflowdefinition", "workflows.add_workflowversion"),
    },
    "execution-list": {"GET": (VIEW_EXECUTION,), "POST": ("executions.add_execution",)},
    # An execution's tasks, events and state are part of it: viewing it is enough.
    "execution-detail": {"GET": (VIEW_EXECUTION,)},
    "task-list": {"GET": (VIEW_EXECUTION,)},
    "task-detail": {"GET": (VIEW_EXECUTION,)},
    "event-list": {"GET": (VIEW_EXECUTION,)},
    "state": {"GET": (VIEW_EXECUTION,)},
    "why": {"GET": (VIEW_EXECUTION,)},
    "task-why": {"GET": (VIEW_EXECUTION,)},
    "cancel": {"POST": (OPERATE,)},
    "pause": {"POST": (OPERATE,)},
    "bulk-cancel": {"POST": (OPERATE,)},
    "bulk-retry": {"POST": (OPERATE,)},
    "resume": {"POST": (OPERATE,)},
    "retry": {"POST": (OPERATE,)},
    "replay": {"POST": (OPERATE,)},
    "task-retry": {"POST": (OPERATE,)},
    "task-fail": {"POST": (OPERATE,)},
    # Approval nodes may further name their approvers (executions.services.control).
    "approve": {"POST": (APPROVE,)},
    "reject": {"POST": (APPROVE,)},
    # A signal is a fact from outside (a webhook, an operator): operating the execution.
    "signal": {"POST": (OPERATE,)},
    "schedule-list": {"GET": (VIEW_SCHEDULE,), "POST": ("executions.add_schedule",)},
    "schedule-detail": {
        "GET": (VIEW_SCHEDULE,),
        "PATCH": ("executions.change_schedule",),
        "DELETE": ("executions.delete_schedule",),
    },
    # A backfill starts executions of the schedule's workflow.
    "schedule-backfill": {"POST": ("executions.change_schedule", "executions.add_execution")},
    "trigger-list": {"GET": ("executions.view_trigger",), "POST": ("executions.add_trigger",)},
    "trigger-detail": {
        "GET": ("executions.view_trigger",),
        "PATCH": ("executions.change_trigger",),
        "DELETE": ("executions.delete_trigger",),
    },
    # An event may start executions: it needs its own add permission.
    "event-create": {"POST": ("executions.add_publishedevent",)},
    # Pools are shared configuration, like workflows: their own model permissions.
    "pool-list": {"GET": ("workflows.view_pool",), "POST": ("workflows.add_pool",)},
    "pool-detail": {"GET": ("workflows.view_pool",), "PATCH": ("workflows.change_pool",)},
    # Counts of executions and tasks by status: what a viewer of executions may see.
    "metrics": {"GET": (VIEW_EXECUTION,)},
}

#: Routes anyone may call, authenticated or not.
PUBLIC = frozenset({"healthz", "schema", "docs", "redoc"})


def required(route: str | None, method: str) -> tuple[str, ...] | None:
    """The permissions a request needs, or None when the route/method has no rule."""
    method = "GET" if method in ("HEAD", "OPTIONS") else method
    return RULES.get(route or "", {}).get(method)


class RoutePermission(BasePermission):
    """Authenticated, and holding every permission RULES names for the route and method.
    Anonymous requests fail first, which DRF turns into a 401."""

    message = "You do not have permission to perform this action."

    def has_permission(self, request: Request, view: APIView) -> bool:
        route = request.resolver_match.url_name if request.resolver_match else None
        if route in PUBLIC or (route == "metrics" and engine_settings.METRICS_PUBLIC):
            return True
        if not (request.user and request.user.is_authenticated):
            return False
        needed = required(route, request.method or "")
        if needed is None:
            self.message = (
                f"No permission is mapped for {request.method} on this endpoint "
                f"({route}): add it to workflows/rest/permissions.py."
            )
            return False
        missing = [p for p in needed if not request.user.has_perm(p)]
        if missing:
            self.message = (
                f"{request.method} {request.path} needs the permission "
                f"{', '.join(repr(p) for p in missing)}; {_granted_by(missing)}"
            )
            return False
        return True


def _granted_by(permissions: list[str]) -> str:
    """Which shipped role(s) would grant them, for the 403's detail."""
    from workflows.roles import ROLES

    wanted = {tuple(p.split(".", 1)) for p in permissions}
    roles = [name for name, granted in ROLES.items() if wanted <= set(granted)]
    if not roles:
        return "ask an administrator to grant it."
    return f"ask an administrator for the {' or '.join(repr(r) for r in roles)} role (group)."
