"""Token authentication that reads the user's permissions with the token.

Django's ModelBackend reads a user's permissions in two more queries on the first has_perm
(the user's own, then the groups'); every API request makes one (workflows/rest/permissions.py).
On PostgreSQL the token's query carries them as two arrays instead: one round trip where
there were three. Written once as SQL: built through the ORM per request, that one query
cost more CPU than the three simple ones. The permissions are read afresh on every
request, as before: a change of role takes effect on the next one.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions


@cache
def _query(token_model: Any) -> tuple[str, list[str], list[str]]:
    """The SQL, and the attnames of the token's and the user's columns it selects first."""
    user_model = get_user_model()
    q = connection.ops.quote_name
    token_fields = [f for f in token_model._meta.concrete_fields]
    user_fields = [f for f in user_model._meta.concrete_fields]
    own = _through(user_model, "user_permissions")
    groups = _through(user_model, "groups")
    granted = _through(Group, "permissions")

    user_pk = q(user_model._meta.pk.column)

    def col(meta: Any, name: str) -> str:
        return q(meta.get_field(name).column)

    # "app_label.codename", as ModelBackend names a permission.
    name = f"ct.{q('app_label')} || '.' || p.{q('codename')}"
    joined = (
        f"{q(Permission._meta.db_table)} p JOIN {q(ContentType._meta.db_table)} ct "
        f"ON ct.{q('id')} = p.{q('content_type_id')}"
    )
    own_sql = (
        f"SELECT {name} FROM {joined} JOIN {q(own.db_table)} up "
        f"ON up.{col(own, 'permission')} = p.{q('id')} WHERE up.{col(own, 'user')} = u.{user_pk}"
    )
    groups_sql = (
        f"SELECT {name} FROM {joined} JOIN {q(granted.db_table)} gp "
        f"ON gp.{col(granted, 'permission')} = p.{q('id')} JOIN {q(groups.db_table)} ug "
        f"ON ug.{col(groups, 'group')} = gp.{col(granted, 'group')} "
        f"WHERE ug.{col(groups, 'user')} = u.{user_pk}"
    )
    columns = [f"t.{q(f.column)}" for f in token_fields] + [f"u.{q(f.column)}" for f in user_fields]
    user_fk = token_model._meta.get_field("user").column
    sql = (
        f"SELECT {', '.join(columns)}, ARRAY({own_sql}), ARRAY({groups_sql}) "
        f"FROM {q(token_model._meta.db_table)} t JOIN {q(user_model._meta.db_table)} u "
        f"ON u.{user_pk} = t.{q(user_fk)} WHERE t.{q('key')} = %s"
    )
    return sql, [f.attname for f in token_fields], [f.attname for f in user_fields]


def _through(model: Any, name: str) -> Any:
    """The options (_meta) of a many-to-many field's table."""
    return model._meta.get_field(name).remote_field.through._meta


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's, with the user's permissions read in the token's query (PostgreSQL)."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if connection.vendor != "postgresql":  # no arrays: ModelBackend's queries
            return super().authenticate_credentials(key)
        model = self.get_model()
        sql, token_names, user_names = _query(model)
        with connection.cursor() as cursor:
            cursor.execute(sql, [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        split = len(token_names)
        token = model.from_db(connection.alias, token_names, row[:split])
        user = get_user_model().from_db(
            connection.alias, user_names, row[split : split + len(user_names)]
        )
        token.user = user  # type: ignore[attr-defined]  # DRF's Token, or a token model like it
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if not user.is_superuser:  # who has every permission (ModelBackend reads them all)
            # ModelBackend.get_all_permissions (behind has_perm) keeps them here per request.
            own, groups = row[-2], row[-1]
            user._perm_cache = {*own, *groups}  # type: ignore[attr-defined]
        return user, token
