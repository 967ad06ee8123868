"""purge_executions --archive DIR: one history file per execution, written and read back
before anything of it is deleted; the file verifies on an empty database in a fresh
process, and against its tombstone where the tombstone is."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from executions.models import Attempt, Execution, Tombstone
from executions.retention.archive import ArchiveError
from executions.services.sweep import sweep
from executions.worker.runtime import run_task
from tests.api.test_history_file import on_the_embedded_defaults
from tests.api.test_purge import ECHO, purge, run_all
from tests.factories import make_version, start
from tests.purge_world import table_counts

pytestmark = pytest.mark.django_db(transaction=True)


def parent_and_child() -> tuple[Execution, Execution]:
    make_version(ECHO, name="leaf")
    parent = start({"nodes": [{"id": "sub", "type": "workflow", "workflow": "leaf"}]})
    run_task(Attempt.objects.get(execution=parent, node_id="sub").pk)
    child = run_all(Execution.objects.get(parent_execution=parent))
    sweep()
    parent.refresh_from_db()
    assert parent.status == "succeeded"
    return parent, child


def replay_from(path: Path) -> str:
    out = StringIO()
    call_command("replay_execution", "--from-file", str(path), "--verify", "--quiet", stdout=out)
    return out.getvalue()


def test_each_execution_is_archived_and_verifies_against_its_tombstone(tmp_path: Path) -> None:
    parent, child = parent_and_child()
    archive = tmp_path / "archive"
    said = purge("--archive", str(archive))
    assert "archived 2 history files" in said
    files = sorted(p.name for p in archive.iterdir())
    assert files == sorted(f"{e.pk}.json" for e in (parent, child))
    for execution in (parent, child):
        body = json.loads((archive / f"{execution.pk}.json").read_text())
        assert body["execution_id"] == str(execution.pk)
        assert len(body["events"]) == execution.last_seq
        assert body["last_hash"] == Tombstone.objects.get(pk=execution.pk).last_hash
        said = replay_from(archive / f"{execution.pk}.json")
        assert f"verified: {execution.last_seq} events, hash chain intact" in said
        assert f"matches the tombstone of purged execution {execution.pk}" in said


def test_an_archive_verifies_in_a_fresh_process_on_an_empty_database(tmp_path: Path) -> None:
    execution = run_all(start(ECHO, {"x": 1}))
    purge("--archive", str(tmp_path / "archive"))
    path = tmp_path / "archive" / f"{execution.pk}.json"
    done = on_the_embedded_defaults(tmp_path, "--from-file", str(path), "--verify")
    assert done.returncode == 0, done.stderr
    assert f"verified: {execution.last_seq} events, hash chain intact" in done.stdout


def test_an_archive_cut_short_does_not_match_its_tombstone(tmp_path: Path) -> None:
    """A file whose last event was dropped and its last_hash set to match still chains: the
    tombstone is what says events are missing."""
    execution = run_all(start(ECHO, {"x": 1}))
    purge("--archive", str(tmp_path))
    path = tmp_path / f"{execution.pk}.json"
    body = json.loads(path.read_text())
    body["events"].pop()
    body["last_hash"] = body["events"][-1]["hash"]
    path.write_text(json.dumps(body))
    with pytest.raises(CommandError, match="does not match the tombstone"):
        replay_from(path)


def test_an_archive_that_cannot_be_written_deletes_nothing(tmp_path: Path) -> None:
    run_all(start(ECHO, {"x": 1}))
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    before = table_counts()
    with pytest.raises((ArchiveError, CommandError)):
        purge("--archive", str(blocked / "archive"))
    assert table_counts() == before
