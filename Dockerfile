# One image for web, worker, beat and the migrations (see docker-compose.yml).
#
# The build stage turns the build context (.dockerignore keeps var/, .venv, tests, .git and
# .env out) into the project's wheel: the engine's three apps. The image installs that
# wheel at the versions requirements.lock pins, beside the standalone project that runs it
# (config/: settings, URLs, Celery app, WSGI; and manage.py), which is no part of the
# wheel. tests/packaging/ builds the wheel from the same context, checks that the three
# apps and their files are in it, installs it into a fresh virtualenv and runs it there
# with the standalone project beside it.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    PYTHONPATH=/app \
    WORKFLOW_VAR_DIR=/app/var \
    WORKFLOW_STATIC_ROOT=/app/static \
    WEB_CONCURRENCY=2 \
    PORT=8000
WORKDIR /app

COPY requirements.lock manage.py ./
COPY config ./config
COPY --from=build /wheels /wheels
RUN pip install --constraint requirements.lock /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 --user-group app

# The admin's, the browsable API's and the API docs' files, collected and compressed once
# (WhiteNoise serves them); the throwaway key only lets the settings load for this step.
RUN SECRET_KEY=collectstatic-at-build-time-only python manage.py collectstatic --noinput -v 0 \
    && rm -rf /app/var \
    && mkdir -p /app/var \
    && chown app:app /app/var

USER app
EXPOSE 8000
# GET /healthz (database and broker) with a Host that ALLOWED_HOSTS accepts. The worker
# and beat services of docker-compose.yml replace it with their own probe.
HEALTHCHECK --interval=15s --timeout=10s --start-period=30s --retries=3 \
    CMD ["python", "-m", "executions.metrics.probe", "web"]
# gunicorn reads WEB_CONCURRENCY for its number of workers. Threads, and a timeout above
# the 30 s a long poll (GET .../events?wait=30) may wait, so a waiting client neither
# takes a whole worker nor gets it killed as hung.
CMD ["sh", "-c", "exec gunicorn config.wsgi --bind 0.0.0.0:${PORT} --threads 8 --timeout 60 --access-logfile -"]
