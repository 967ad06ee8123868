"""manage.py sync_workflows against the database: the definition files of installed apps
(made on disk for each test, installed with Django's app reloading) created, left alone
when unchanged, versioned with a diff and a what-if replay when changed; --check and
--dry-run write nothing; a broken file writes nothing at all."""

from __future__ import annotations

import copy
import json
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import modify_settings

from config.demo.sync import sync_demo_workflow
from executions.models import Event, Execution
from executions.services.control import signal_send
from executions.services.start import execution_start
from tests.api.test_control import APPROVAL
from workflows.files import FileProblems
from workflows.models import WorkflowDefinition, WorkflowVersion
from workflows.services import workflow_version_create
from workflows.sync import SYNC_BY, sync_apply, sync_plan

pytestmark = pytest.mark.django_db

#: A workflow the orchestrator runs alone (no worker): an approval, then a delay it skips.
V1: dict[str, Any] = APPROVAL
ECHO: dict[str, Any] = {"nodes": [{"id": "say", "type": "function", "function": "std.echo"}]}
#: The standalone demo's workflow: one of the files every sync discovers.
DEMO_FILE = Path(__file__).resolve().parents[2] / "config/demo/workflows/user-signup.json"


def v2() -> dict[str, Any]:
    """V1 with a node added after `hold`, and `hold` (which approvals without data skip)
    made longer."""
    changed = copy.deepcopy(V1)
    changed["nodes"][1]["seconds"] = 7200
    changed["nodes"].append(
        {
            "id": "cool",
            "type": "delay",
            "seconds": 1,
            "depends_on": ["hold"],
            "trigger_rule": "all_done",
        }
    )
    return changed


@contextmanager
def apps_on_disk(root: Path, count: int) -> Iterator[list[Path]]:
    """`count` apps made under `root` and installed (as a host project's own apps are);
    yields the `workflows` folder of each."""
    labels = [f"host_{uuid.uuid4().hex[:8]}" for _ in range(count)]
    for label in labels:
        (root / label / "workflows").mkdir(parents=True)
        (root / label / "__init__.py").write_text("")
    sys.path.insert(0, str(root))
    try:
        with modify_settings(INSTALLED_APPS={"append": labels}):
            yield [root / label / "workflows" for label in labels]
    finally:
        sys.path.remove(str(root))
        for label in labels:
            sys.modules.pop(label, None)


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    with apps_on_disk(tmp_path, 1) as (only,):
        yield only


def write(folder: Path, name: str, definition: Any) -> Path:
    """The definition file `name` (a dict is dumped, a str written as it is)."""
    path = folder / f"{name}.json"
    path.write_text(definition if isinstance(definition, str) else json.dumps(definition))
    return path


def sync(*args: str) -> dict[str, str]:
    """Each printed line by workflow name (the repository's own files print too)."""
    out = StringIO()
    call_command("sync_workflows", *args, stdout=out)
    lines = [line.split(": ", 1) for line in out.getvalue().splitlines()]
    assert all(len(parts) == 2 for parts in lines), out.getvalue()
    return dict(lines)


def stored() -> tuple[int, int, int, int]:
    """What a sync could write, counted."""
    return (
        WorkflowDefinition.objects.count(),
        WorkflowVersion.objects.count(),
        Execution.objects.count(),
        Event.objects.count(),
    )


def run_v1(count: int, *, approve: int) -> list[Execution]:
    """`count` executions of the synced `review` v1, the first `approve` of them approved
    (they end), the rest still waiting for the approval."""
    version = WorkflowVersion.objects.get(workflow__name="review", version=1)
    started = []
    for index in range(count):
        execution, _ = execution_start(version=version, input={"n": index})
        if index < approve:
            signal_send(execution_id=execution.pk, node_id="review", decision="approve")
        execution.refresh_from_db()
        started.append(execution)
    return started


def test_a_new_file_is_created_and_a_second_run_prints_unchanged(folder: Path) -> None:
    write(folder, "review", V1)
    write(folder, "echo", ECHO)
    first = sync()
    assert (first["review"], first["echo"]) == ("created", "created")
    workflow = WorkflowDefinition.objects.get(name="review")
    (version,) = workflow.versions.all()
    assert (version.version, version.definition) == (1, V1)
    assert (workflow.created_by, version.created_by) == (SYNC_BY, SYNC_BY)
    before = stored()
    again = sync()
    assert set(again.values()) == {"unchanged"}, again
    assert stored() == before


def test_the_same_json_in_another_key_order_and_spacing_is_unchanged(folder: Path) -> None:
    path = write(folder, "review", V1)
    sync()
    reordered = {"output": V1["output"], "nodes": [dict(reversed(n.items())) for n in V1["nodes"]]}
    path.write_text(json.dumps(reordered, indent=4, sort_keys=False))
    assert sync("--check")["review"] == "unchanged"
    assert sync()["review"] == "unchanged"
    assert WorkflowVersion.objects.filter(workflow__name="review").count() == 1


def test_a_changed_file_is_one_new_version_with_its_diff_and_what_if(folder: Path) -> None:
    path = write(folder, "review", V1)
    sync()
    run_v1(3, approve=2)
    write(folder, "review", v2())
    before = stored()
    line = sync()["review"]
    assert line == (
        "new version 2: nodes added: cool; nodes changed: hold (seconds); "
        "what-if over the latest 3 executions of version 1: 2 of 3 would diverge "
        "(2 at node cool)"
    ), line
    versions = WorkflowVersion.objects.filter(workflow__name="review").order_by("version")
    assert [(v.version, v.definition) for v in versions] == [(1, V1), (2, v2())]
    assert versions[1].created_by == SYNC_BY
    # Only the version is new: the what-if replays wrote nothing.
    assert stored() == (before[0], before[1] + 1, *before[2:])
    assert sync()["review"] == "unchanged"
    # Back to the first definition: a third version, the removal and field change listed;
    # no execution of version 2 exists to replay.
    path.write_text(json.dumps(V1))
    assert sync()["review"] == (
        "new version 3: nodes removed: cool; nodes changed: hold (seconds); "
        "what-if: no executions of version 2 to replay"
    )


def test_the_what_if_names_where_executions_part_or_that_none_do(folder: Path) -> None:
    write(folder, "review", V1)
    sync()
    run_v1(2, approve=1)
    # Nothing here retries: a retry policy changes no decision.
    write(folder, "review", {**V1, "retry_policy": {"max_attempts": 5}})
    assert sync("--dry-run")["review"] == (
        "new version 2: definition fields changed: retry_policy; what-if over the latest 2 "
        "executions of version 1: none would diverge"
    )
    # Another output: the execution that ended would have ended with another.
    write(folder, "review", {**V1, "output": "{{ nodes.review.output.data }}"})
    assert sync("--dry-run")["review"] == (
        "new version 2: definition fields changed: output; what-if over the latest 2 "
        "executions of version 1: 1 of 2 would diverge (1 at workflow_completed)"
    )


def test_check_exits_1_when_anything_would_change_and_writes_nothing(folder: Path) -> None:
    write(folder, "review", V1)
    before = stored()
    with pytest.raises(
        CommandError, match=r"would change: run manage\.py sync_workflows"
    ) as raised:
        sync("--check")
    assert raised.value.returncode == 1
    assert stored() == before
    sync()
    assert set(sync("--check").values()) == {"unchanged"}  # no exception: exit 0
    write(folder, "review", v2())
    before = stored()
    with pytest.raises(CommandError, match="1 workflow would change"):
        sync("--check")
    assert stored() == before


def test_dry_run_prints_what_a_sync_would_do_and_writes_nothing(folder: Path) -> None:
    write(folder, "review", V1)
    before = stored()
    assert sync("--dry-run")["review"] == "created"
    assert stored() == before
    sync()
    write(folder, "review", v2())
    before = stored()
    assert sync("--dry-run")["review"].startswith("new version 2: nodes added: cool")
    assert stored() == before
    assert sync()["review"].startswith("new version 2: nodes added: cool")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"nodes": [', "JSON parse error - Expecting value: line 1 column 12"),
        ("", "JSON parse error - Expecting value: line 1 column 1"),
        (
            json.dumps({"nodes": [{"id": "a", "type": "function", "function": "no.such"}]}),
            "nodes[a].function: ",
        ),
        (
            json.dumps({"nodes": [{"id": "a", "type": "delay", "seconds": 1, "pool": "ghosts"}]}),
            "nodes[a].pool: ",
        ),
        (json.dumps([1]), "must be a JSON object"),
        # Valid JSON and a valid definition, but PostgreSQL cannot store it.
        (
            json.dumps({"nodes": [{**ECHO["nodes"][0], "input": {"x": "a\u0000b"}}]}),
            "NUL characters (\\u0000) and unpaired surrogates (\\ud800-\\udfff) are not "
            "accepted (at nodes.0.input.x).",
        ),
        (
            '{"nodes": [{"id": "say", "type": "function", "function": "std.echo", '
            '"input": {"\\ud800": 1}}]}',
            "NUL characters (\\u0000) and unpaired surrogates (\\ud800-\\udfff) are not "
            "accepted (at nodes.0.input.\\ud800).",
        ),
    ],
)
def test_a_broken_file_names_itself_and_nothing_of_the_run_is_written(
    folder: Path, text: str, problem: str
) -> None:
    write(folder, "fine", ECHO)
    write(folder, "review", V1)
    sync()
    write(folder, "review", v2())  # would be a new version: not written either
    write(folder, "another", ECHO)  # would be created: not written either
    broken = write(folder, "broken", text)
    before = stored()
    with pytest.raises(CommandError) as raised:
        sync()
    message = str(raised.value)
    assert f"{broken}: {problem}" in message or f"broken.json: {problem}" in message, message
    assert message.endswith("Nothing was written.")
    assert "review" not in message
    assert "another" not in message
    assert stored() == before
    with pytest.raises(CommandError):
        sync("--check")
    with pytest.raises(CommandError):
        sync("--dry-run")
    assert stored() == before


def test_the_problems_are_the_messages_of_a_400(folder: Path, api) -> None:
    bad = {"nodes": [{"id": "a", "type": "function", "function": "std.echo", "depends_on": ["z"]}]}
    write(folder, "bad", bad)
    with pytest.raises(CommandError) as raised:
        sync()
    response = api.post("/workflows", {"name": "bad", "definition": bad}, format="json")
    assert response.status_code == 400
    for error in response.json()["errors"]:
        shown = f"nodes[{error['node']}].{error['field']}: {error['message']}"
        assert f"bad.json: {shown}" in str(raised.value)


def test_a_file_name_that_is_no_workflow_name_is_refused(folder: Path) -> None:
    write(folder, "Not A Slug", ECHO)
    with pytest.raises(CommandError, match=r"Not A Slug\.json: name: Use lowercase letters"):
        sync()
    assert not WorkflowDefinition.objects.exists()


def test_a_name_longer_than_the_model_stores_is_refused_before_any_write(folder: Path) -> None:
    write(folder, "fine", ECHO)
    write(folder, "a" * 101, ECHO)
    too_long = r"a{101}\.json: name: Ensure this value has at most 100 characters \(it has 101\)"
    for args in (("--check",), ()):
        with pytest.raises(CommandError, match=too_long):
            sync(*args)
    assert not WorkflowDefinition.objects.exists()


def test_two_apps_defining_one_name_is_an_error_naming_both_files(tmp_path: Path) -> None:
    with apps_on_disk(tmp_path, 2) as (first, second):
        one, other = write(first, "twice", ECHO), write(second, "twice", V1)
        with pytest.raises(CommandError) as raised:
            sync()
    message = str(raised.value)
    named = sorted([str(one), str(other)])
    assert f"{named[1]}: the workflow 'twice' is already defined by {named[0]}" in message
    assert not WorkflowDefinition.objects.filter(name="twice").exists()


def calls(other: str) -> dict[str, Any]:
    """A definition whose one node runs the latest version of the workflow `other`."""
    return {"nodes": [{"id": "call", "type": "workflow", "workflow": other}]}


def test_a_cycle_closed_by_two_files_of_one_run_is_refused(folder: Path) -> None:
    write(folder, "ping", calls("pong"))
    write(folder, "pong", calls("ping"))
    with pytest.raises(CommandError, match="leads back to"):
        sync("--check")
    with pytest.raises(CommandError, match="leads back to"):
        sync()
    assert not WorkflowDefinition.objects.exists()


def test_a_call_turned_around_in_one_run_is_stored_as_the_plan_checked_it(
    folder: Path,
) -> None:
    # b calls a, a leaf; then a calls b and b becomes a leaf: no cycle once both are in.
    # Stored one at a time, a's new version would see a -> b (v1) -> a until b's is in:
    # the writes count the run's other versions as the plan's checks do.
    write(folder, "a", ECHO)
    write(folder, "b", calls("a"))
    sync()
    write(folder, "a", calls("b"))
    write(folder, "b", ECHO)
    planned = sync("--dry-run")
    assert (planned["a"], planned["b"]) == (
        "new version 2: nodes added: call; nodes removed: say; "
        "what-if: no executions of version 1 to replay",
        "new version 2: nodes added: say; nodes removed: call; "
        "what-if: no executions of version 1 to replay",
    )
    assert sync() == planned
    latest = {
        name: WorkflowVersion.objects.filter(workflow__name=name).latest("version")
        for name in ("a", "b")
    }
    assert {name: (v.version, v.definition) for name, v in latest.items()} == {
        "a": (2, calls("b")),
        "b": (2, ECHO),
    }
    assert set(sync("--check").values()) == {"unchanged"}


def test_a_version_stored_after_the_plan_fails_the_whole_run(folder: Path) -> None:
    write(folder, "review", V1)
    write(folder, "echo", ECHO)
    sync()
    write(folder, "review", v2())
    write(folder, "other", ECHO)
    plan = sync_plan()
    workflow = WorkflowDefinition.objects.get(name="review")
    workflow_version_create(workflow=workflow, definition=ECHO, by="someone")
    before = stored()
    with pytest.raises(FileProblems, match="version 2 of 'review' was stored while this sync ran"):
        sync_apply(plan)
    assert stored() == before
    assert not WorkflowDefinition.objects.filter(name="other").exists()


def test_the_demo_stores_its_workflow_through_the_sync() -> None:
    lines: list[str] = []
    version, definition = sync_demo_workflow(lines.append)
    assert (version, definition) == (1, json.loads(DEMO_FILE.read_text()))
    assert "sync_workflows: user-signup: created" in lines
    lines.clear()
    assert sync_demo_workflow(lines.append) == (1, definition)
    assert "sync_workflows: user-signup: unchanged" in lines
