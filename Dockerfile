# One image for web, worker and beat (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    WORKFLOW_VAR_DIR=/app/var

WORKDIR /app

# Only what the package needs, so .venv/ and var/ never end up in the image.
COPY pyproject.toml manage.py ./
COPY config ./config
COPY workflows ./workflows
COPY executions ./executions
COPY nodes ./nodes
RUN pip install . \
    && useradd --create-home --uid 10001 --user-group app \
    && mkdir -p /app/var \
    && chown app:app /app/var

USER app
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "-b", "0.0.0.0:8000", "--workers", "2"]
