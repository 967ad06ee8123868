"""Every route of the engine, the one URLconf a host includes:
`path("<prefix>/", include("workflows.urls"))`.

The names are namespaced ("workflows:execution-list"); permissions are looked up by the
name without its namespace (workflows.rest.permissions).
"""

from __future__ import annotations

from executions import urls as executions_urls
from executions.metrics import urls as metrics_urls
from executions.schedules import urls as schedules_urls
from executions.triggers import urls as triggers_urls
from workflows import views
from workflows.rest.routes import both
from workflows.rest.schema import RedocView, SchemaView, SwaggerView

app_name = "workflows"

SCHEMA = f"{app_name}:schema"
# Redoc with nothing loaded from another host (workflows/templates/workflows/redoc.html).
redoc = RedocView.as_view(url_name=SCHEMA, template_name="workflows/redoc.html")

urlpatterns = [
    *both("schema", SchemaView.as_view(), "schema"),
    *both("docs", SwaggerView.as_view(url_name=SCHEMA), "docs"),
    *both("redoc", redoc, "redoc"),
    *both("workflows", views.WorkflowListCreate.as_view(), "workflow-list"),
    *both("workflows/<str:workflow_id>", views.WorkflowDetail.as_view(), "workflow-detail"),
    *both(
        "workflows/<str:workflow_id>/versions",
        views.WorkflowVersionListCreate.as_view(),
        "workflow-versions",
    ),
    *executions_urls.urlpatterns,
    *schedules_urls.urlpatterns,
    *triggers_urls.urlpatterns,
    *metrics_urls.urlpatterns,
]
