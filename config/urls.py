from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("schema/", SpectacularAPIView.as_view()),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema")),
    path("", include("workflows.urls")),
    path("", include("executions.urls")),
    path("", include("schedules.urls")),
    path("", include("monitoring.urls")),
]
