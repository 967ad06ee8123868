# config/__init__.py: load the Celery app whenever Django starts (the web server,
# manage.py shell, your tests), so every process publishes to your broker.
from .celery import app as celery_app

__all__ = ("celery_app",)
