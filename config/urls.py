from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

# Unmatched paths and crashes answer in JSON like the rest of the API.
handler404 = "config.errors.not_found"
handler500 = "config.errors.server_error"

# Redoc with nothing loaded from another host (config/templates/config/redoc.html).
redoc = SpectacularRedocView.as_view(url_name="schema", template_name="config/redoc.html")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("redoc", redoc, name="redoc"),
    path("redoc/", redoc, name="redoc"),
    path("", include("workflows.urls")),
    path("", include("executions.urls")),
    path("", include("schedules.urls")),
    path("", include("triggers.urls")),
    path("", include("monitoring.urls")),
]
