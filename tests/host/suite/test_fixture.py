"""The engine's pytest fixture, from the conftest's pytest_plugins; the run's log passes
replay_execution --verify."""

from io import StringIO

from django.core.management import call_command


def test_workflow_run_is_the_harness_with_the_database_open(workflow_run):
    definition = {
        "nodes": [
            {"id": "nap", "type": "delay", "seconds": 3600},
            {"id": "echo", "type": "function", "function": "std.echo", "depends_on": ["nap"]},
        ]
    }
    result = workflow_run(definition)
    assert result.status == "succeeded"
    out = StringIO()
    call_command("replay_execution", str(result.id), "--verify", stdout=out)
