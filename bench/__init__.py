"""Benchmarks of the engine against raw Celery in the same run: `./dev bench [smoke|full]`."""
