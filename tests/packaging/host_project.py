"""A Django team's own project joined by the engine, made as a host would make it.

`django-admin startproject config` (the settings package cookiecutter-django names
`config`, the name the engine's own standalone project has too), `startapp shop`, then
only what the engine asks of a host: its apps in INSTALLED_APPS, one URL line, and a
Celery app made as Celery's Django guide makes it. The shop app brings its functions
(workflow_functions.py) and its workflows (workflows/<name>.json) the docs' way.
No WORKFLOW_* setting and no engine-specific CELERY_* setting anywhere: the engine must
run on its defaults.

The host keeps API defaults of its own (session login, IsAuthenticated, pages of two),
which the engine's views must neither take nor change.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

#: The apps the docs have a host add (docs/examples/project/settings.py), in its order,
#: then the host's own.
ENGINE_APPS = (
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "workflows",
    "executions",
    "nodes",
)
HOST_APPS = ("shop",)

#: The engine's one URL line, and the host's own.
URL_LINES = (
    'path("engine/", include("workflows.urls")),',
    'path("shop/", include("shop.urls")),',
    'path("accounts/", include("django.contrib.auth.urls")),',
)

#: The host's API defaults: none of them may reach the engine's views.
REST_FRAMEWORK = """
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 2,
}
"""

#: Celery's "First steps with Django", word for word but the project's name.
CELERY_PY = """\
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
"""

CONFIG_INIT_PY = """\
from .celery import app as celery_app

__all__ = ("celery_app",)
"""

#: The host app's workflows, as definition files of its own (shop/workflows/<name>.json).
WORKFLOWS = {
    "checkout": {
        "nodes": [
            {"id": "total", "type": "function", "function": "shop.total",
             "input": {"quantity": "{{ input.quantity }}", "price": "{{ input.price }}"}},
        ],
        "output": "{{ nodes.total.output }}",
    },
    "refund": {
        "nodes": [
            {"id": "refund", "type": "function", "function": "shop.refund",
             "input": {"order": "{{ input.order }}"}, "retry_policy": {"max_attempts": 1}},
        ],
        "output": "{{ nodes.refund.output }}",
    },
}  # fmt: skip

#: The host app's files (startapp made the package; these replace or add to its files).
SHOP = {
    "models.py": '''
        from django.db import models


        class Order(models.Model):
            item = models.CharField(max_length=100)
            quantity = models.PositiveIntegerField()
            price = models.PositiveIntegerField()

            class Meta:
                ordering = ["pk"]


        class Finished(models.Model):
            """One row per execution_finished this project received."""

            execution_id = models.UUIDField()
            status = models.CharField(max_length=16)
            received_at = models.DateTimeField(auto_now_add=True)
        ''',
    "apps.py": """
        from django.apps import AppConfig


        class ShopConfig(AppConfig):
            default_auto_field = "django.db.models.BigAutoField"
            name = "shop"

            def ready(self):
                from executions.signals import execution_finished

                from .receivers import record_finished

                execution_finished.connect(record_finished, dispatch_uid="shop.finished")
        """,
    "receivers.py": """
        from .models import Finished


        def record_finished(sender, execution, status, **kwargs):
            Finished.objects.create(execution_id=execution.id, status=status)
        """,
    "workflow_functions.py": """
        from nodes import workflow_function


        @workflow_function("shop.total")
        def total(input, ctx):
            return {"total": input["quantity"] * input["price"], "key": ctx.idempotency_key}


        @workflow_function("shop.refund")
        def refund(input, ctx):
            raise ValueError(f"order {input['order']} cannot be refunded")
        """,
    "serializers.py": """
        from rest_framework import serializers

        from .models import Order


        class OrderSerializer(serializers.ModelSerializer):
            class Meta:
                model = Order
                fields = ["id", "item", "quantity", "price"]
        """,
    "views.py": """
        import json

        from django.contrib.auth.decorators import login_required
        from django.db import transaction
        from django.http import JsonResponse
        from django.views.decorators.http import require_POST
        from rest_framework.generics import ListAPIView

        from workflows import api

        from .models import Order
        from .serializers import OrderSerializer


        class OrderList(ListAPIView):
            queryset = Order.objects.all()
            serializer_class = OrderSerializer


        class OutOfStock(Exception):
            pass


        def _place(request):
            body = json.loads(request.body)
            order = Order.objects.create(**body)
            run = api.start(
                "checkout",
                {"order": order.pk, "quantity": order.quantity, "price": order.price},
                by=request.user,
            )
            return order, run


        @login_required
        @require_POST
        def place(request):
            with transaction.atomic():
                order, run = _place(request)
            return JsonResponse({"order": order.pk, "execution": str(run.id)}, status=201)


        @login_required
        @require_POST
        def place_out_of_stock(request):
            try:
                with transaction.atomic():
                    order, run = _place(request)
                    raise OutOfStock(order.pk, str(run.id))
            except OutOfStock as refused:
                order_pk, execution_id = refused.args
            return JsonResponse({"order": order_pk, "execution": execution_id}, status=409)
        """,
    "urls.py": """
        from django.urls import path

        from . import views

        urlpatterns = [
            path("orders/", views.OrderList.as_view()),
            path("orders/place", views.place),
            path("orders/place-out-of-stock", views.place_out_of_stock),
        ]
        """,
    "templates/registration/login.html": """
        <form method="post">{% csrf_token %}{{ form }}<button>Log in</button></form>
        """,
}


def edit_once(path: Path, pattern: str, replacement: str) -> None:
    """Replace what `pattern` matches, which must be exactly one place of the file
    (startproject's template changed: this test must be told)."""
    text = path.read_text()
    edited, count = re.subn(pattern, lambda _: replacement, text, flags=re.DOTALL)
    assert count == 1, f"{path.name}: {pattern!r} matched {count} times in:\n{text}"
    path.write_text(edited)


def edit_settings(project: Path, *, database: dict[str, str], broker_url: str) -> None:
    settings = project / "config" / "settings.py"
    apps = "".join(f'    "{app}",\n' for app in (*ENGINE_APPS, *HOST_APPS))
    edit_once(settings, r"(?<=\n)(?=\]\n\nMIDDLEWARE)", apps)
    databases = json.dumps({"default": database}, indent=4)
    edit_once(settings, r"DATABASES = \{.*?\n\}\n", f"DATABASES = {databases}\n")
    with settings.open("a") as file:
        file.write(f'\nCELERY_BROKER_URL = "{broker_url}"\n{REST_FRAMEWORK}')


def edit_urls(project: Path) -> None:
    urls = project / "config" / "urls.py"
    edit_once(urls, r"from django\.urls import path\n", "from django.urls import include, path\n")
    added = "".join(f"    {line}\n" for line in URL_LINES)
    edit_once(urls, r"(?<=admin\.site\.urls\),\n)", added)


def add_celery_app(project: Path) -> None:
    (project / "config" / "celery.py").write_text(CELERY_PY)
    (project / "config" / "__init__.py").write_text(CONFIG_INIT_PY)


def write_shop(project: Path) -> None:
    for name, source in SHOP.items():
        path = project / "shop" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source).lstrip())
    for name, definition in WORKFLOWS.items():
        path = project / "shop" / "workflows" / f"{name}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(definition, indent=2))


def make_host(project: Path, *, database: dict[str, str], broker_url: str) -> None:
    """Edit what startproject and startapp made in `project` into the host project."""
    edit_settings(project, database=database, broker_url=broker_url)
    edit_urls(project)
    add_celery_app(project)
    write_shop(project)
