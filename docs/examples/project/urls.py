# urls.py of your project: one line mounts the engine's whole API under a prefix.
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),  # the engine's admin pages and console join yours
    path("engine/", include("workflows.urls")),
]
