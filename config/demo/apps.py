from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The standalone project's demo (`python manage.py run_demo`): not part of the engine."""

    name = "config.demo"
    label = "demo"
