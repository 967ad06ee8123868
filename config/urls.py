from django.contrib import admin
from django.urls import include, path

# Unmatched paths and crashes answer in JSON like the rest of the API.
handler404 = "workflows.rest.errors.not_found"
handler500 = "workflows.rest.errors.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("workflows.urls")),
]
