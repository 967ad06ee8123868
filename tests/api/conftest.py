from __future__ import annotations

import pytest


@pytest.fixture
def user(django_user_model):
    """The API tests' user holds every shipped role, so each test exercises its endpoint;
    what a user without a role gets is tests/api/test_permissions.py's subject."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username="operator", password="pw-operator")
    user.groups.set(Group.objects.filter(name__in=["viewer", "operator", "approver", "author"]))
    return user
