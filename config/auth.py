"""Token authentication that reads the user's permissions with the token.

Django's ModelBackend reads a user's permissions in two more queries on the first has_perm
(the user's own, then the groups'); every API request makes one (config/permissions.py).
On PostgreSQL the token's query carries them as an array instead: one round trip where
there were three. The permissions are read afresh on every request, as before: a change
of role takes effect on the next one.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import F, OuterRef, QuerySet, Value
from django.db.models.functions import Concat
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions


def granted(**holder: Any) -> QuerySet:
    """The "app_label.codename" of the permissions `holder` selects (user= for a user's
    own, group__user= for their groups'), as ModelBackend names them."""
    return (
        Permission.objects.filter(**holder)
        .annotate(perm=Concat(F("content_type__app_label"), Value("."), F("codename")))
        .values("perm")
    )


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's, with the user's permissions read in the token's query (PostgreSQL)."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if connection.vendor != "postgresql":  # no ArraySubquery: ModelBackend's queries
            return super().authenticate_credentials(key)
        from django.contrib.postgres.expressions import ArraySubquery  # needs psycopg

        model = self.get_model()
        tokens = model.objects.select_related("user").annotate(
            # Two simple subqueries (each an index lookup), not one OR across both joins.
            own=ArraySubquery(granted(user=OuterRef("user_id"))),
            groups=ArraySubquery(granted(group__user=OuterRef("user_id"))),
        )
        try:
            token = tokens.get(key=key)
        except model.DoesNotExist:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        user = token.user
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if not user.is_superuser:  # who has every permission (ModelBackend reads them all)
            # ModelBackend.get_all_permissions (behind has_perm) keeps them here per request.
            user._perm_cache = {*token.own, *token.groups}
        return user, token
