"""Secrets: refused at definition time unless `{{ secrets.NAME }}`, looked up by name on
the worker, scrubbed from every recorded value and log line, and what a recorded value may
be (finite, bounded)."""

from __future__ import annotations

import logging

import pytest
from django.test import override_settings

from executions.engine.events import EventType
from executions.services.recorded import recordable
from nodes.errors import NodeError
from nodes.secrets import redact, with_secrets
from workflows.dsl import Node
from workflows.dsl.parser import parse_definition
from workflows.dsl.problems import DefinitionError
from workflows.kinds.function import FunctionSpec

CANARY = "cAnArY-7f3e/9b+2d"
SECRETS = {"CANARY": CANARY, "OTHER": "other-value-42"}


def echo(value: object, **top: object) -> dict:
    node = {"id": "leak", "type": "function", "function": "std.echo", "input": {"v": value}}
    return {"nodes": [node], **top}


def refusal(definition: dict) -> str:
    with pytest.raises(DefinitionError) as caught:
        parse_definition(definition)
    (problem,) = caught.value.problems
    assert (problem.node, problem.field) == ("leak", "input.v"), problem
    return problem.message


@pytest.mark.parametrize(
    "expression",
    [
        "@",
        "@.secrets",
        "@.secrets.CANARY",
        "keys(@)",
        "values(@)",
        "to_string(@)",
        "{all: @}",
        "[input, @]",
        "*",
        "*.CANARY",
        "[0]",
        "[*]",
        "@ | secrets",
        "merge(@, `{}`)",
    ],
)
def test_expressions_that_read_the_whole_context_are_refused(expression: str) -> None:
    assert "whole context" in refusal(echo(f"{{{{ {expression} }}}}"))


@pytest.mark.parametrize(
    "expression",
    [
        "secrets",
        "secrets.*",
        "secrets.CANARY || input.x",
        "keys(secrets)",
        "to_string(secrets)",
        '"secrets".CANARY',
        "join(',', [secrets.CANARY])",
        "length(secrets.CANARY)",
    ],
)
def test_secrets_are_reachable_only_as_secrets_dot_name(expression: str) -> None:
    assert "{{ secrets.NAME }}" in refusal(echo(f"x {{{{ {expression} }}}}"))


def test_the_plain_form_and_nested_current_node_are_accepted() -> None:
    parse_definition(echo("Bearer {{ secrets.CANARY }}"))
    parse_definition(echo("{{ sort_by(input.rows, &@.n) }}"))
    parse_definition(echo("{{ input.rows | @ }}"))


def test_declared_secrets_scope_what_a_definition_may_use() -> None:
    parse_definition(echo("{{ secrets.CANARY }}", secrets=["CANARY"]))
    message = refusal(echo("{{ secrets.CANARY }}", secrets=["OTHER"]))
    assert "CANARY" in message
    assert "declare" in message
    with pytest.raises(DefinitionError, match="list of secret names"):
        parse_definition(echo("x", secrets="CANARY"))


def node(payload: object) -> Node:
    return Node(id="leak", type="function", spec=FunctionSpec("std.echo"), input=payload)


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_the_worker_looks_secrets_up_by_name_and_renders_nothing_twice() -> None:
    template = {"a": "{{ secrets.CANARY }}", "b": "x {{ secrets.CANARY }} {{ input.user }}"}
    # The user's input holds template text: it is data, never rendered again.
    context = {"input": {"user": "{{ secrets.OTHER }}"}, "nodes": {}, "execution": {}}
    payload = with_secrets(node(template), None, context)
    assert payload == {"a": CANARY, "b": f"x {CANARY} {{{{ secrets.OTHER }}}}"}


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_a_missing_secret_names_only_itself() -> None:
    with pytest.raises(NodeError) as caught:
        with_secrets(node({"a": "{{ secrets.NOPE }}", "b": "{{ secrets.CANARY }}"}), None, {})
    assert caught.value.type == "MissingSecret"
    assert "NOPE" in caught.value.message
    assert "CANARY" not in caught.value.message
    assert "OTHER" not in caught.value.message


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_a_stored_version_with_another_secret_expression_fails_cleanly() -> None:
    bad = node({"a": "{{ secrets.CANARY }}", "b": "{{ secrets.CANARY || input.x }}"})
    with pytest.raises(NodeError, match=r"only {{ secrets.NAME }} may read a secret"):
        with_secrets(bad, None, {})


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_redact_masks_every_form_of_every_secret_in_values_and_keys() -> None:
    value = {
        "plain": f"token={CANARY}",
        "url": "https://x/?t=cAnArY-7f3e%2F9b%2B2d",
        "form": "t=cAnArY-7f3e%2F9b%2B2d",
        CANARY: ["other-value-42", {"deep": f"Bearer {CANARY}"}],
    }
    assert redact(value) == {
        "plain": "token=***",
        "url": "https://x/?t=***",
        "form": "t=***",
        "***": ["***", {"deep": "Bearer ***"}],
    }


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_recordable_masks_refuses_nan_and_bounds_the_size() -> None:
    kind, data = recordable(EventType.TASK_COMPLETED, {"output": {"echo": CANARY}})
    assert (kind, data) == (EventType.TASK_COMPLETED, {"output": {"echo": "***"}})
    kind, data = recordable(EventType.TASK_COMPLETED, {"output": {"rows": [1, float("nan")]}})
    assert kind == EventType.TASK_FAILED
    assert data["error"]["type"] == "InvalidOutput"
    assert "output.rows[1]" in data["error"]["message"]
    assert not data["error"]["retryable"]
    error = {"type": "X", "message": f"at {CANARY}", "retryable": True, "ratio": float("inf")}
    kind, data = recordable(EventType.TASK_FAILED, {"error": error})
    assert data["error"]["message"] == "at ***"
    assert data["error"]["ratio"] is None
    assert "null" in data["error"]["note"]
    with override_settings(WORKFLOW_MAX_RECORDED_BYTES=1000):
        kind, data = recordable(EventType.TASK_COMPLETED, {"output": "x" * 1001})
        assert data["error"]["type"] == "OutputTooLarge"
        assert "WORKFLOW_MAX_RECORDED_BYTES (1000)" in data["error"]["message"]
        big = {"type": "Boom", "message": "y" * 5000, "retryable": False, "dump": "z" * 5000}
        kind, data = recordable(EventType.TASK_FAILED, {"error": big})
        assert kind == EventType.TASK_FAILED
        assert data["error"]["truncated"] is True
        assert data["error"]["type"] == "Boom"
        assert "dump" not in data["error"]


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_log_records_are_redacted_messages_and_tracebacks(caplog) -> None:
    logger = logging.getLogger("tests.secrets")
    with caplog.at_level(logging.INFO, logger="tests.secrets"):
        logger.info("GET https://api/%s", CANARY)
        try:
            raise RuntimeError(f"refused {CANARY}")
        except RuntimeError:
            logger.exception("failed")
    text = caplog.text
    assert CANARY not in text
    assert "GET https://api/***" in text
    assert "refused ***" in text


@override_settings(WORKFLOW_SECRETS=SECRETS)
def test_a_badly_formatted_log_record_is_left_to_logging_own_error_path() -> None:
    factory = logging.getLogRecordFactory()
    record = factory("tests.secrets", logging.WARNING, __file__, 1, "two %s %s", ("one",), None)
    assert (record.msg, record.args) == ("two %s %s", ("one",))
