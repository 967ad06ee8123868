"""manage.py validate_workflow, offline (these tests may not touch the database: any query
would fail them), and manage.py workflow_schema, the definition's JSON Schema for
editors."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tests.examples import SIGNUP_DEFINITION

ECHO: dict[str, Any] = {"nodes": [{"id": "say", "type": "function", "function": "std.echo"}]}


def validate(*paths: Path) -> str:
    out = StringIO()
    call_command("validate_workflow", *map(str, paths), stdout=out)
    return out.getvalue()


def test_valid_files_are_reported_valid(tmp_path: Path) -> None:
    good = tmp_path / "signup.json"
    good.write_text(json.dumps(SIGNUP_DEFINITION, indent=2))
    echo = tmp_path / "echo.json"
    echo.write_text(json.dumps(ECHO))
    assert validate(good, echo).splitlines() == [f"{good}: valid", f"{echo}: valid"]


def test_the_demo_workflow_file_is_valid() -> None:
    demo = Path(__file__).resolve().parents[2] / "config/demo/workflows/user-signup.json"
    assert validate(demo).strip().endswith("user-signup.json: valid")


def test_every_problem_of_every_file_is_named_and_exits_non_zero(tmp_path: Path) -> None:
    good = tmp_path / "echo.json"
    good.write_text(json.dumps(ECHO))
    not_json = tmp_path / "half.json"
    not_json.write_text('{"nodes": [')
    invalid = tmp_path / "cycle.json"
    invalid.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "a", "type": "function", "function": "std.echo", "depends_on": ["b"]},
                    {"id": "b", "type": "function", "function": "no.such", "depends_on": ["a"]},
                ]
            }
        )
    )
    badly_named = tmp_path / "Echo Twice.json"
    badly_named.write_text(json.dumps(ECHO))
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command(
            "validate_workflow", *map(str, (good, not_json, invalid, badly_named)), stdout=out
        )
    assert raised.value.returncode == 1
    assert out.getvalue() == f"{good}: valid\n"
    lines = str(raised.value).splitlines()
    assert lines[0].startswith(f"{not_json}: JSON parse error - Expecting value: line 1"), lines
    assert f"{invalid}: nodes[a].depends_on: cycle: a -> b -> a; remove one" in str(raised.value)
    assert any(line.startswith(f"{invalid}: nodes[b].function: ") for line in lines), lines
    assert lines[-1].startswith(f"{badly_named}: name: Use lowercase letters"), lines
    assert "here 'Echo Twice'" in lines[-1]


def test_what_the_database_cannot_store_is_refused_as_a_400_refuses_it(tmp_path: Path) -> None:
    # Valid JSON and definitions that parse, but PostgreSQL refuses a NUL and a lone
    # surrogate: refused with the message of the API's 400, naming the file and where.
    nul = tmp_path / "nul.json"
    nul.write_text(json.dumps({"nodes": [{**ECHO["nodes"][0], "input": {"x": "a\u0000b"}}]}))
    lone = tmp_path / "lone.json"
    lone.write_text('{"nodes": [{"id": "say", "type": "function", "function": "std.echo", '
                    '"input": {"k": ["ok", "\\udfff"]}}]}')  # fmt: skip
    with pytest.raises(CommandError) as raised:
        validate(nul, lone)
    refused = "NUL characters (\\u0000) and unpaired surrogates (\\ud800-\\udfff) are not accepted"
    assert str(raised.value).splitlines() == [
        f"{nul}: {refused} (at nodes.0.input.x).",
        f"{lone}: {refused} (at nodes.0.input.k.1).",
    ]


def test_a_name_longer_than_the_model_stores_is_refused_offline(tmp_path: Path) -> None:
    # The model field's own checks, its length among them: not first found by the insert.
    longest, longer = tmp_path / f"{'a' * 100}.json", tmp_path / f"{'a' * 101}.json"
    for path in (longest, longer):
        path.write_text(json.dumps(ECHO))
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("validate_workflow", str(longest), str(longer), stdout=out)
    assert out.getvalue() == f"{longest}: valid\n"
    assert f"{longer}: name: Ensure this value has at most 100 characters (it has 101)." in str(
        raised.value
    )


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        CommandError, match=re.escape(f"{tmp_path / 'gone.json'}: cannot be read: ")
    ):
        validate(tmp_path / "gone.json")


def editor_schema() -> dict[str, Any]:
    out = StringIO()
    call_command("workflow_schema", stdout=out)
    return json.loads(out.getvalue())


def test_the_editor_schema_checks_definitions_as_the_published_one() -> None:
    schema = editor_schema()
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    validator = jsonschema.Draft4Validator(schema)
    validator.check_schema(schema)
    validator.validate(SIGNUP_DEFINITION)
    unknown_field = {"nodes": [{**ECHO["nodes"][0], "retries": 3}]}
    assert not validator.is_valid(unknown_field)
    assert not validator.is_valid({"nodes": [{"id": "a", "type": "teleport"}]})
    assert "discriminator" not in json.dumps(schema)


@pytest.mark.django_db
def test_the_editor_schema_is_the_definition_schema_of_the_api() -> None:
    published = APIClient().get("/schema", {"format": "json"}).json()["components"]["schemas"]
    text = json.dumps(editor_schema()).replace("#/definitions/", "#/components/schemas/")
    schema = json.loads(text)
    for name, component in schema.pop("definitions").items():
        component.pop("discriminator", None)
        expected = {k: v for k, v in published[name].items() if k != "discriminator"}
        assert component == expected, name
    root = {k: v for k, v in schema.items() if k not in ("$schema", "title", "description")}
    assert root == published["Definition"]


def test_the_schema_is_written_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "workflow.schema.json"
    out = StringIO()
    call_command("workflow_schema", "--output", str(target), stdout=out)
    assert json.loads(target.read_text()) == editor_schema()
    assert out.getvalue() == f"wrote {target}\n"
