"""replay_execution --export and --from-file: a history leaves its database as a JSON file
and verifies elsewhere, on the embedded defaults, with no rows at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection

from executions.services.control import signal_send
from tests.api.test_control import APPROVAL
from tests.factories import start

pytestmark = pytest.mark.django_db

GOLDEN = Path(settings.BASE_DIR) / "tests" / "golden" / "histories"


def exported(tmp_path: Path) -> tuple[Path, str]:
    execution = start(APPROVAL, {"who": "ada"})
    signal_send(execution_id=execution.pk, node_id="review", decision="approve", data={"hold": 1})
    path = tmp_path / "history.json"
    call_command("replay_execution", str(execution.pk), "--export", str(path))
    return path, str(execution.pk)


def on_the_embedded_defaults(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """manage.py in a fresh process with no DATABASE_URL or broker: an empty SQLite file
    under its own var/ directory, never migrated."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(WORKFLOW_VAR_DIR=str(tmp_path / "laptop"), DEBUG="1")
    return subprocess.run(
        [sys.executable, "manage.py", "replay_execution", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_exported_history_verifies_on_the_embedded_defaults(tmp_path) -> None:
    path, execution_id = exported(tmp_path)
    body = json.loads(path.read_text())
    assert body["execution_id"] == execution_id
    assert body["definition"] == APPROVAL
    assert [e["seq"] for e in body["events"]] == list(range(1, len(body["events"]) + 1))
    assert body["last_hash"] == body["events"][-1]["hash"]
    assert connection.vendor in ("postgresql", "sqlite")  # exported from the suite's database

    done = on_the_embedded_defaults(tmp_path, "--from-file", str(path), "--verify")
    assert done.returncode == 0, done.stderr
    assert f"verified: {len(body['events'])} events, hash chain intact" in done.stdout
    assert "review" in done.stdout
    assert "status running" in done.stdout  # the hold delay is still waiting


def test_an_edited_history_fails_to_verify_at_the_edited_seq(tmp_path) -> None:
    path, _ = exported(tmp_path)
    body = json.loads(path.read_text())
    edited = next(e for e in body["events"] if e["type"] == "signal_received")
    edited["data"]["data"] = {"hold": 0}
    path.write_text(json.dumps(body))
    done = on_the_embedded_defaults(tmp_path, "--from-file", str(path), "--verify")
    assert done.returncode == 1
    assert f"hash chain broken at seq {edited['seq']}" in done.stderr


@pytest.mark.parametrize("name", ["http_retries", "map", "compensation"])
def test_golden_histories_are_history_files_too(name, capsys) -> None:
    call_command("replay_execution", "--from-file", str(GOLDEN / f"{name}.json"), "--verify")
    assert "hash chain intact" in capsys.readouterr().out


def test_at_seq_folds_a_prefix_of_the_file(tmp_path, capsys) -> None:
    path, _ = exported(tmp_path)
    call_command("replay_execution", "--from-file", str(path), "--at-seq", "2")
    assert "events 2" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("nope", "Expecting value"),
        ("[]", "does not hold a JSON object"),
        ('{"events": []}', "no execution_id, definition"),
        ('{"execution_id": "x", "definition": {}, "events": [{}]}', r"events\[0\]"),
        ('{"execution_id": "x", "definition": {"nodes": 1}, "events": []}', "does not parse"),
    ],
)
def test_a_file_that_is_not_a_history_is_refused(tmp_path, content, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        call_command("replay_execution", "--from-file", str(path), "--verify")


def test_from_file_takes_no_execution_id(tmp_path) -> None:
    with pytest.raises(CommandError, match="no execution id"):
        call_command("replay_execution", "x", "--from-file", str(tmp_path / "h.json"))
    with pytest.raises(CommandError, match="give an execution id"):
        call_command("replay_execution")
    with pytest.raises(CommandError, match="No such file"):
        call_command("replay_execution", "--from-file", str(tmp_path / "missing.json"))
