"""Retention: WORKFLOW_RETENTION_DAYS and a definition's "retention_days", purged daily by
an entry of the engine's own in beat (restored like the sweeper's)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from config.celery import app
from executions.beat import RETENTION_ENTRY, RETENTION_TASK
from executions.models import Execution, Tombstone
from executions.retention.tasks import purge_expired
from executions.services.retention import retention_purge
from tests.api.test_beat import scheduler
from tests.api.test_purge import ECHO, run_all
from tests.factories import make_version, start
from workflows.conf import engine_settings
from workflows.dsl import DefinitionError
from workflows.dsl.parser import parse_definition
from workflows.models import WorkflowVersion

pytestmark = pytest.mark.django_db(transaction=True)

KEPT_LONGER = {**ECHO, "retention_days": 30}


def test_unset_keeps_everything() -> None:
    assert engine_settings.RETENTION_DAYS is None
    execution = run_all(start(ECHO))
    reports = retention_purge(now=timezone.now() + timedelta(days=3650))
    assert [r.executions for r in reports] == []
    assert purge_expired() == {"executions": 0, "events": 0, "left": 0}
    assert Execution.objects.filter(pk=execution.pk).exists()


def test_the_setting_purges_what_ended_longer_ago_than_it_says() -> None:
    execution = run_all(start(ECHO))
    with override_settings(WORKFLOW_RETENTION_DAYS="2"):
        assert engine_settings.RETENTION_DAYS == 2
        retention_purge(now=timezone.now() + timedelta(days=1))
        assert Execution.objects.filter(pk=execution.pk).exists()
        retention_purge(now=timezone.now() + timedelta(days=3))
    assert Tombstone.objects.filter(pk=execution.pk).exists()


def test_a_definition_s_retention_days_wins_over_the_setting() -> None:
    default = run_all(start(ECHO))
    own = run_all(start(KEPT_LONGER))
    with override_settings(WORKFLOW_RETENTION_DAYS=2):
        retention_purge(now=timezone.now() + timedelta(days=3))
        assert not Execution.objects.filter(pk=default.pk).exists()
        assert Execution.objects.filter(pk=own.pk).exists()
        retention_purge(now=timezone.now() + timedelta(days=31))
    assert Tombstone.objects.filter(pk=own.pk).exists()


def test_a_definition_s_retention_days_applies_with_no_setting() -> None:
    own = run_all(start(KEPT_LONGER))
    other = run_all(start(ECHO))
    retention_purge(now=timezone.now() + timedelta(days=31))
    assert Tombstone.objects.filter(pk=own.pk).exists()
    assert Execution.objects.filter(pk=other.pk).exists()


@pytest.mark.parametrize("value", ["0", "-1", "soon", True])
def test_a_wrong_retention_setting_names_itself(value: object) -> None:
    with (
        override_settings(WORKFLOW_RETENTION_DAYS=value),
        pytest.raises(ImproperlyConfigured, match="WORKFLOW_RETENTION_DAYS"),
    ):
        _ = engine_settings.RETENTION_DAYS


def test_the_parser_takes_retention_days_and_refuses_what_is_not_a_number_of_days() -> None:
    assert parse_definition(KEPT_LONGER).retention_days == 30
    assert parse_definition(ECHO).retention_days is None
    for wrong in (0, -3, 1.5, "30", True, None):
        with pytest.raises(DefinitionError, match="retention_days"):
            parse_definition({**ECHO, "retention_days": wrong})
    assert isinstance(make_version(KEPT_LONGER), WorkflowVersion)


def test_the_definition_schema_declares_retention_days(api) -> None:
    schema = api.get("/schema", HTTP_ACCEPT="application/json").json()
    declared = schema["components"]["schemas"]["Definition"]["properties"]["retention_days"]
    assert declared["type"] == "integer"
    assert declared["minimum"] == 1


def test_beat_runs_the_daily_purge_and_restores_its_entry(monkeypatch) -> None:
    monkeypatch.setattr("django_celery_beat.schedulers.close_old_connections", lambda: None)
    assert RETENTION_TASK in app.tasks
    beat = scheduler()
    schedule = beat.all_as_schedule()
    assert schedule[RETENTION_ENTRY].task == RETENTION_TASK
    row = PeriodicTask.objects.select_related("interval").get(name=RETENTION_ENTRY)
    assert (row.interval.every, row.interval.period) == (86400, "seconds")
    row.enabled = False
    row.save()
    assert RETENTION_ENTRY in beat.all_as_schedule()
    assert PeriodicTask.objects.get(name=RETENTION_ENTRY).enabled
