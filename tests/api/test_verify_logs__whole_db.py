"""verify_logs over a whole database: batches, a checkpoint to resume from, --after,
worker processes, and the bench's synthetic copies of the golden histories (every one of
which must verify, or the measurement would measure failures)."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from bench.whole_db import populate
from executions.management.commands import verify_logs
from executions.models import Execution

pytestmark = pytest.mark.django_db


def test_synthetic_copies_of_every_golden_history_verify(tmp_path) -> None:
    executions, events = populate(1500, chunk=40)
    assert Execution.objects.count() == executions
    report = tmp_path / "report.json"
    call_command("verify_logs", "--all", "--batch", "7", "--json", str(report))
    body = json.loads(report.read_text())
    assert (body["executions"], body["events"], body["problems"]) == (executions, events, [])
    kinds = set(Execution.objects.values_list("workflow__name", flat=True))
    assert len(kinds) >= 10  # a copy of each golden history


def test_an_interrupted_run_resumes_from_its_checkpoint(tmp_path, monkeypatch) -> None:
    populate(300, chunk=40)
    total = Execution.objects.count()
    checkpoint = tmp_path / "progress.json"
    real, calls = verify_logs.check_batch, []

    def dies_on_the_third_batch(ids):
        calls.append(len(ids))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(ids)

    monkeypatch.setattr(verify_logs, "check_batch", dies_on_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        call_command("verify_logs", "--all", "--batch", "5", "--checkpoint", str(checkpoint))
    saved = json.loads(checkpoint.read_text())
    assert saved["executions"] == 10
    ordered = list(Execution.objects.order_by("pk").values_list("pk", flat=True))
    assert saved["after"] == str(ordered[9])
    monkeypatch.setattr(verify_logs, "check_batch", real)
    report = tmp_path / "report.json"
    call_command(
        "verify_logs",
        "--all",
        "--batch",
        "5",
        "--checkpoint",
        str(checkpoint),
        "--json",
        str(report),
    )
    body = json.loads(report.read_text())
    assert body["executions"] == total
    assert body["events"] == sum(Execution.objects.values_list("last_seq", flat=True))
    assert not checkpoint.exists()  # finished: the next run starts afresh


def test_after_checks_only_the_executions_past_an_id(capsys) -> None:
    populate(100, chunk=40)
    ordered = list(Execution.objects.order_by("pk").values_list("pk", flat=True))
    call_command("verify_logs", "--all", "--after", str(ordered[2]))
    assert f"checked {len(ordered) - 3} executions" in capsys.readouterr().out
    with pytest.raises(CommandError, match="--after"):
        call_command("verify_logs", "--all", "--after", "nope")


def test_a_broken_checkpoint_is_refused(tmp_path) -> None:
    bad = tmp_path / "progress.json"
    bad.write_text("{}")
    with pytest.raises(CommandError, match="not a checkpoint"):
        call_command("verify_logs", "--all", "--checkpoint", str(bad))


@pytest.mark.django_db(transaction=True)
def test_worker_processes_find_what_one_process_finds(tmp_path) -> None:
    populate(400, chunk=40)
    Execution.objects.filter(pk=Execution.objects.order_by("pk")[5].pk).update(last_seq=999)
    reports = []
    for workers in ("1", "2"):
        report = tmp_path / f"report-{workers}.json"
        with pytest.raises(CommandError, match="1 problem"):
            call_command(
                "verify_logs", "--all", "--batch", "4", "--workers", workers, "--json", str(report)
            )
        body = json.loads(report.read_text())
        reports.append((body["executions"], body["events"], body["problems"]))
    assert reports[0] == reports[1]
    assert reports[0][2][0]["kind"] == "chain"
