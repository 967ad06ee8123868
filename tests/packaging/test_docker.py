"""The Dockerfile and docker-compose.yml, read as Docker would read them (no container engine
runs here): the image is built from the wheel of the whole build context, at the locked
versions, runs as a non-root user, has static files collected and a healthcheck; compose
runs the migrations once before anything else and checks the health of every service."""

from __future__ import annotations

import re

import yaml

from tests.packaging.context import ROOT


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    parsed = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            parsed.append((word.upper(), " ".join(rest.split())))
    return parsed


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in instructions():
        if instruction[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def test_the_image_installs_the_wheel_of_the_whole_build_context() -> None:
    build, final = stages()
    assert ("COPY", ". .") in build  # everything .dockerignore admits (test_contents.py)
    assert any(i == "RUN" and "pip wheel" in a and a.endswith(" .") for i, a in build)
    assert ("COPY", "--from=build /wheels /wheels") in final
    installs = [a for i, a in final if i == "RUN" and "pip install" in a]
    assert installs
    assert "--constraint requirements.lock /wheels/*.whl" in installs[0]
    assert any(i == "COPY" and "requirements.lock" in a.split() for i, a in final)
    # The standalone project the wheel's apps run in (not in the wheel).
    assert any(i == "COPY" and "manage.py" in a.split() for i, a in final)
    assert ("COPY", "config ./config") in final


def test_the_image_collects_static_files_runs_as_a_user_and_checks_its_health() -> None:
    final = stages()[-1]
    assert any(i == "RUN" and "collectstatic --noinput" in a for i, a in final)
    users = [a for i, a in final if i == "USER"]
    assert users
    assert users[-1] not in ("root", "0")
    (healthcheck,) = [a for i, a in final if i == "HEALTHCHECK"]
    assert '"executions.metrics.probe", "web"' in healthcheck
    env = " ".join(a for i, a in final if i == "ENV")
    assert "DJANGO_SETTINGS_MODULE=config.settings" in env
    assert "WORKFLOW_STATIC_ROOT=" in env  # collected outside var/, which a volume may hide


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_migrates_once_before_web_worker_and_beat_start() -> None:
    services = compose()["services"]
    assert services["migrate"]["command"][-2:] == ["migrate", "--noinput"]
    assert services["migrate"]["restart"] == "no"
    for name in ("web", "worker", "beat"):
        after = services[name]["depends_on"]
        assert after["migrate"] == {"condition": "service_completed_successfully"}, name
        assert after["postgres"] == after["redis"] == {"condition": "service_healthy"}, name


def test_compose_checks_the_health_of_every_long_running_service() -> None:
    services = compose()["services"]
    probes = {
        "web": ["CMD", "python", "-m", "executions.metrics.probe", "web"],
        "worker": ["CMD", "python", "-m", "executions.metrics.probe", "worker"],
        "beat": ["CMD", "python", "-m", "executions.metrics.probe", "beat"],
    }
    for name, test in probes.items():
        assert services[name]["healthcheck"]["test"] == test, name
    assert services["postgres"]["healthcheck"]
    assert services["redis"]["healthcheck"]


def test_the_example_env_names_every_variable_compose_requires() -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{(\w+):\?", text))
    example = {
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    }
    assert required == {"SECRET_KEY", "POSTGRES_PASSWORD"}
    assert required <= example, required - example
    assert ".env" in (ROOT / ".gitignore").read_text().split()
