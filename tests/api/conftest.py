from __future__ import annotations

import pytest
from django.contrib.auth.models import AbstractUser
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


@pytest.fixture
def user(django_user_model) -> AbstractUser:
    return django_user_model.objects.create_user(username="operator", password="pw-operator")


@pytest.fixture
def api_client(user: AbstractUser) -> APIClient:
    """An API client authenticated with a DRF token, as a real client would be."""
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client
