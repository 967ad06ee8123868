"""The shipped roles: Django groups a team assigns to its users in the admin.

Each group holds the view permissions (so one group is enough to use the API) plus what
the role does. Creating them is idempotent and only ever adds: permissions an
administrator granted to a group by hand are kept. Run on every migrate (post_migrate,
connected in workflows.apps) and by `python manage.py create_roles`.
"""

from __future__ import annotations

from django.apps import apps as global_apps
from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Group, Permission
from django.db.models import Q

#: (app_label, codename) every role can see with.
VIEW = (
    ("workflows", "view_workflowdefinition"),
    ("workflows", "view_workflowversion"),
    ("executions", "view_execution"),
    ("executions", "view_task"),
    ("executions", "view_event"),
    ("executions", "view_attempt"),
    ("executions", "view_timer"),
    ("executions", "view_schedule"),
    ("executions", "view_schedulefire"),
    ("executions", "view_trigger"),
    ("executions", "view_publishedevent"),
    ("executions", "view_tombstone"),
    ("workflows", "view_pool"),
)

ROLES: dict[str, tuple[tuple[str, str], ...]] = {
    "viewer": VIEW,
    # Starts executions and steers them: cancel, retry, replay (pause, resume, bulk).
    "operator": (
        *VIEW,
        ("executions", "add_execution"),
        ("executions", "operate_execution"),
        # An event starts the executions its triggers name.
        ("executions", "add_publishedevent"),
    ),
    # Answers approval nodes (which may further name their approvers).
    "approver": (*VIEW, ("executions", "approve_task")),
    # Writes workflows, their versions and their schedules.
    "author": (
        *VIEW,
        ("workflows", "add_workflowdefinition"),
        ("workflows", "change_workflowdefinition"),
        ("workflows", "add_workflowversion"),
        ("workflows", "change_workflowversion"),
        ("executions", "add_schedule"),
        ("executions", "change_schedule"),
        ("executions", "delete_schedule"),
        ("executions", "add_trigger"),
        ("executions", "change_trigger"),
        ("executions", "delete_trigger"),
        # Pools: shared slots the workflows they write name.
        ("workflows", "add_pool"),
        ("workflows", "change_pool"),
    ),
}

_APPS = ("workflows", "executions")


def roles_ensure(*, using: str = "default", apps=global_apps) -> dict[str, int]:
    """Create the groups (if missing) and add their permissions; returns name -> count."""
    for label in _APPS:
        # The permissions of a fresh database are created by post_migrate too, possibly
        # after this handler: create them first (idempotent).
        create_permissions(apps.get_app_config(label), verbosity=0, using=using, apps=apps)
    counts = {}
    for name, wanted in ROLES.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        query = Q()
        for app_label, codename in wanted:
            query |= Q(content_type__app_label=app_label, codename=codename)
        permissions = list(Permission.objects.using(using).filter(query))
        missing = set(wanted) - {(p.content_type.app_label, p.codename) for p in permissions}
        if missing:
            raise LookupError(f"role {name!r}: no such permissions {sorted(missing)}")
        group.permissions.add(*permissions)
        counts[name] = len(permissions)
    return counts


def roles_on_migrate(sender, using: str = "default", **kwargs) -> None:
    """post_migrate handler: runs once per migrate, when the workflows app reports in."""
    if sender.name == "workflows":
        roles_ensure(using=using)
