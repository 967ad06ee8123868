"""python manage.py create_roles: create the viewer, operator, approver and author groups."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from workflows.roles import roles_ensure


class Command(BaseCommand):
    help = "Create (or complete) the groups viewer, operator, approver and author."

    def handle(self, *args, **options) -> None:
        for name, count in roles_ensure().items():
            self.stdout.write(f"{name}: {count} permissions")
