"""API tokens in the admin, masked: a token is a password, so only its prefix is shown.

DRF's own TokenAdmin lists the full key and names each token by its key in messages, the
delete confirmation and the admin's history (django_admin_log.object_repr). This replaces
it; its app comes before this one in INSTALLED_APPS, so it is registered by now.
"""

from __future__ import annotations

from django.contrib import admin
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import TokenProxy

#: Characters of a key shown: enough to tell tokens apart, far too few to use one.
SHOWN = 6


def masked(key: str | None) -> str:
    return f"{key[:SHOWN]}…" if key else ""


# The admin names an object by str(): in lists, messages and its history rows. TokenProxy
# exists for the admin alone, so the API's Token keeps its own __str__.
def _token_str(self: TokenProxy) -> str:
    return f"token {masked(self.key)} of {self.user}"


TokenProxy.__str__ = _token_str  # type: ignore[method-assign,assignment]


class MaskedTokenAdmin(TokenAdmin):
    list_display = ("key_prefix", "user", "created")

    @admin.display(description="key")
    def key_prefix(self, obj: TokenProxy) -> str:
        return masked(obj.key)


if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)
admin.site.register(TokenProxy, MaskedTokenAdmin)
