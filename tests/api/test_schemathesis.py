"""schemathesis (4.x) with every check (`--checks all`) against the live /schema, through a
real HTTP server (pytest-django's live_server) and a token: zero failures.

This is the CLI a user would type, with a bounded budget for CI (a few examples per
operation and phase, a time limit). Half the generated ids are real ones (a workflow, a
waiting approval, a schedule), so the operations reach their logic instead of a 404.

Two deliberate settings. For the operations whose input refers to other rows or forms a
graph (a definition's depends_on must name its own nodes and be acyclic, functions must
be registered, a workflow/version must exist, a cron must be a real schedule, a trigger's
expressions must read the event, at_seq must
be within that log), a JSON Schema cannot say what is valid, so a 400 is an accepted
answer to schema-valid data there (positive_data_acceptance, REFERENTIAL below). And no
NUL characters are generated (see the config). Every other check, negative_data_rejection
included, runs as schemathesis ships it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token

from executions.schedules.services import schedule_create
from executions.services.start import execution_start
from tests.ci import missing
from tests.factories import make_version

pytestmark = pytest.mark.django_db(transaction=True)

ST = Path(sys.executable).with_name("st")
#: Examples per operation and phase.
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "8"))
#: The operations whose validity a JSON Schema cannot express (see the module docstring).
REFERENTIAL = [
    "POST /workflows",
    "POST /workflows/{workflow_id}/versions",
    "POST /executions",
    # version: one of that execution's workflow's versions.
    "POST /executions/{execution_id}/replay",
    "POST /schedules",
    # cron: a real cron expression, as in POST /schedules.
    "PATCH /schedules/{schedule_id}",
    # end: not before start nor after now, and the range within WORKFLOW_BACKFILL_MAX fires.
    "POST /schedules/{schedule_id}/backfill",
    # version: one of that trigger's workflow's versions.
    "PATCH /triggers/{name}",
    # workflow must exist; input and filter expressions must read the event.
    "POST /triggers",
    # at_seq may not pass the end of that execution's log.
    "GET /executions/{execution_id}/state",
]
APPROVAL = {"nodes": [{"id": "review", "type": "approval"}]}


def _config(path: Path, *, workflow: str, execution: str, schedule: str) -> Path:
    accepted = '["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]'
    half = "probability = 0.5"
    path.write_text(
        f"""
[dictionaries.workflows]
values = ["{workflow}"]
[dictionaries.executions]
values = ["{execution}"]
[dictionaries.schedules]
values = ["{schedule}"]
[dictionaries.nodes]
values = ["review"]

# The API refuses NUL (\\u0000) in every string with a 400 on every backend, because
# PostgreSQL cannot store it (tests/api/test_no_500.py); OpenAPI 3.0 cannot say so for
# the keys of free-form objects, so none is generated.
[generation]
allow-x00 = false

[parameters]
"path.workflow_id" = {{ dictionary = "workflows", {half} }}
"path.execution_id" = {{ dictionary = "executions", {half} }}
"path.schedule_id" = {{ dictionary = "schedules", {half} }}
"path.node_id" = {{ dictionary = "nodes", {half} }}
# The events long poll waits up to ?wait= seconds when nothing is new, which a random
# after_seq past the log's end always is: within the time budget, no wait at all (its
# bounds and its waiting are tests/api/test_longpoll.py's).
"query.wait" = 0

[[operations]]
include-name = {json.dumps(REFERENTIAL)}
checks.positive_data_acceptance.expected-statuses = {accepted}
"""
    )
    return path


def _token() -> str:
    user = User.objects.create_user(username="schemathesis")
    user.groups.set(Group.objects.filter(name__in=["viewer", "operator", "approver", "author"]))
    return Token.objects.create(user=user).key


def test_schemathesis_all_checks_pass(live_server, tmp_path: Path) -> None:
    if not ST.exists():
        missing(f"schemathesis's CLI `st` is not at {ST}: pip install -e .[dev]")
    version = make_version(APPROVAL, name="st-flow")
    execution, _ = execution_start(version=version, input={})
    schedule = schedule_create(workflow=version.workflow, cron="0 0 1 1 *", enabled=False)
    config = _config(
        tmp_path / "schemathesis.toml",
        workflow=version.workflow.name,
        execution=str(execution.pk),
        schedule=str(schedule.pk),
    )
    report = tmp_path / "report.json"
    command = [
        str(ST),
        "--config-file",
        str(config),
        "run",
        f"{live_server.url}/schema",
        "--checks",
        "all",
        "--header",
        f"Authorization: Token {_token()}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--generation-deterministic",
        "--max-time",
        "75",
        "--request-timeout",
        "20",
        "--workers",
        "1",
        "--no-color",
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    out = Path(os.environ.get("SCHEMATHESIS_OUT", tmp_path)) / "schemathesis.txt"
    out.write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-2000:]
    assert "generated" in run.stdout
    assert report.exists()
