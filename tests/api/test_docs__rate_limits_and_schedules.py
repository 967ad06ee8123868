"""The rate limits and schedules how-to: every file it includes exists, every workflow
definition there validates, and the schedule and backfill bodies are what the API takes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from executions.schedules.serializers import BackfillSerializer, ScheduleCreateSerializer
from executions.schedules.services import schedule_create
from tests.factories import make_version
from workflows.services import definition_validate

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/how-to/rate-limits-and-schedules.md"
INCLUDE = re.compile(r'--8<-- "(?P<path>[^"]+)"')


def included() -> list[str]:
    return INCLUDE.findall(PAGE.read_text())


def test_every_included_file_exists_and_is_json() -> None:
    paths = included()
    assert paths, "the page includes no example"
    for path in paths:
        assert (ROOT / path).is_file(), f"{PAGE.name} includes {path}, which does not exist"
        json.loads((ROOT / path).read_text())


@pytest.mark.parametrize("path", [p for p in included() if "/workflows/" in p])
def test_each_workflow_definition_validates(path: str) -> None:
    definition_validate(definition=json.loads((ROOT / path).read_text()))


def test_the_schedule_and_backfill_bodies_are_accepted() -> None:
    examples = ROOT / "docs/examples"
    workflow = make_version(
        json.loads((examples / "workflows/daily-report.json").read_text()), name="daily-report"
    ).workflow
    body = ScheduleCreateSerializer(
        data=json.loads((examples / "schedules/daily-report.json").read_text())
    )
    assert body.is_valid(), body.errors
    data = dict(body.validated_data)
    schedule = schedule_create(
        workflow=workflow,
        cron=data["cron"],
        input=data["input"],
        jitter_seconds=data["jitter_seconds"],
    )
    assert schedule.jitter_seconds == 300
    backfill = BackfillSerializer(
        data=json.loads((examples / "schedules/backfill-march.json").read_text())
    )
    assert backfill.is_valid(), backfill.errors
