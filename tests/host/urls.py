"""The host's URLconf: its own routes, and the engine's under a prefix of its choosing."""

from django.contrib import admin
from django.urls import include, path

from tests.host.shop.views import TeamList

urlpatterns = [
    path("admin/", admin.site.urls),
    path("engine/", include("workflows.urls")),
    path("shop/teams", TeamList.as_view(), name="teams"),
]
