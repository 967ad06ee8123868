"""Replay and retry under an Idempotency-Key, without workers (an approval node runs in the
orchestrator alone, so an execution stands still between two requests): a repeat answers
as the first did and starts nothing; the key used for another request is a 409, whichever
operation took it first."""

from __future__ import annotations

from typing import Any

import pytest

from executions.models import Event, Execution, Task
from executions.services import control
from tests.factories import start
from workflows import api as workflows_api

pytestmark = pytest.mark.django_db

REVIEW = {"nodes": [{"id": "review", "type": "approval"}]}


def _post(client, url: str, key: str | None, body: dict[str, Any] | None = None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post(url, body or {}, format="json", **headers)


def _replays_of(execution: Execution) -> int:
    return Execution.objects.filter(replay_of=execution).count()


def _retry_rounds(execution: Execution) -> int:
    return Event.objects.filter(execution=execution, type="retry_requested").count()


def _all_conflicts(responses: list[Any], key: str) -> None:
    for response in responses:
        assert response.status_code == 409, response.content
        assert key in response.json()["detail"]


def _cancelled() -> Execution:
    execution = start(REVIEW)
    control.execution_cancel(execution_id=execution.pk)
    return execution


def test_a_replay_repeated_with_its_key_starts_one_execution_and_answers_the_same(api) -> None:
    execution = start(REVIEW, {"order": 42})
    url = f"/executions/{execution.pk}/replay"
    first = _post(api, url, "replay-42")
    again = _post(api, url, "replay-42")
    assert first.status_code == again.status_code == 201, first.content
    assert again.json() == first.json()
    assert first.json()["replay_of"] == str(execution.pk)
    assert _replays_of(execution) == 1
    assert Execution.objects.get(pk=first.json()["id"]).idempotency_key == "replay-42"


def test_replays_with_two_keys_or_none_start_one_execution_each(api) -> None:
    execution = start(REVIEW)
    url = f"/executions/{execution.pk}/replay"
    ids = {_post(api, url, key).json()["id"] for key in ("replay-a", "replay-b", None, None)}
    assert len(ids) == 4
    assert _replays_of(execution) == 4


def test_a_replay_key_reused_for_another_request_is_a_409(api) -> None:
    execution, other = start(REVIEW), start(REVIEW)
    assert _post(api, f"/executions/{execution.pk}/replay", "replay-k").status_code == 201
    refused = [
        _post(api, f"/executions/{execution.pk}/replay", "replay-k", {"from_node": "review"}),
        _post(api, f"/executions/{execution.pk}/replay", "replay-k", {"input": {"x": 1}}),
        _post(api, f"/executions/{other.pk}/replay", "replay-k"),
        _post(api, f"/executions/{_cancelled().pk}/retry", "replay-k"),
        _post(api, "/executions", "replay-k", {"workflow": execution.workflow.name}),
    ]
    _all_conflicts(refused, "replay-k")
    assert _replays_of(execution) == 1
    assert _replays_of(other) == 0


def test_a_start_key_reused_for_a_replay_is_a_409(api) -> None:
    created = _post(api, "/executions", "start-k", {"workflow": start(REVIEW).workflow.name})
    assert created.status_code == 201
    source = Execution.objects.get(pk=created.json()["id"])
    refused = _post(api, f"/executions/{source.pk}/replay", "start-k")
    assert refused.status_code == 409
    assert _replays_of(source) == 0


def test_a_dry_run_ignores_the_key(api) -> None:
    execution = start(REVIEW)
    url = f"/executions/{execution.pk}/replay"
    assert _post(api, url, "dry-k", {"dry_run": True}).status_code == 200
    assert _post(api, url, "dry-k").status_code == 201
    assert _replays_of(execution) == 1


def test_a_retry_repeated_with_its_key_runs_one_round_and_answers_the_same(api) -> None:
    execution = _cancelled()
    url = f"/executions/{execution.pk}/retry"
    first = _post(api, url, "retry-1")
    again = _post(api, url, "retry-1")
    assert first.status_code == again.status_code == 202, first.content
    assert again.json() == first.json()
    assert first.json()["status"] == "running"
    assert _retry_rounds(execution) == 1
    assert Task.objects.get(execution=execution, node_id="review").attempts == 2
    # Without the key the same request is refused: the execution is running again.
    assert _post(api, url, None).status_code == 409


def test_retries_with_two_keys_are_two_rounds(api) -> None:
    execution = _cancelled()
    url = f"/executions/{execution.pk}/retry"
    assert _post(api, url, "retry-a").status_code == 202
    control.execution_cancel(execution_id=execution.pk)
    assert _post(api, url, "retry-b").status_code == 202
    assert _post(api, url, "retry-a").status_code == 202  # a repeat of the first: nothing
    assert _retry_rounds(execution) == 2
    assert Task.objects.get(execution=execution, node_id="review").attempts == 3


def test_a_retry_key_reused_for_another_request_is_a_409(api) -> None:
    execution, other = _cancelled(), _cancelled()
    assert _post(api, f"/executions/{execution.pk}/retry", "retry-k").status_code == 202
    refused = [
        _post(api, f"/executions/{execution.pk}/retry", "retry-k", {"node_id": "review"}),
        _post(api, f"/executions/{other.pk}/retry", "retry-k"),
        _post(api, f"/executions/{other.pk}/replay", "retry-k"),
        _post(api, "/executions", "retry-k", {"workflow": other.workflow.name}),
    ]
    _all_conflicts(refused, "retry-k")
    assert _retry_rounds(execution) == 1
    assert _retry_rounds(other) == 0
    assert _replays_of(other) == 0


def test_a_refused_retry_keeps_no_key(api) -> None:
    execution = start(REVIEW)
    url = f"/executions/{execution.pk}/retry"
    assert _post(api, url, "early").status_code == 409  # still running: nothing to retry
    control.execution_cancel(execution_id=execution.pk)
    assert _post(api, url, "early").status_code == 202
    assert _retry_rounds(execution) == 1


def test_an_empty_key_is_a_400(api) -> None:
    execution = _cancelled()
    for action in ("retry", "replay"):
        assert _post(api, f"/executions/{execution.pk}/{action}", "").status_code == 400
    assert _retry_rounds(execution) == 0
    assert _replays_of(execution) == 0


def test_the_python_api_retries_once_per_key() -> None:
    execution = _cancelled()
    handle = workflows_api.get(execution.pk)
    assert handle.retry(idempotency_key="py-1").status == "running"
    assert handle.retry(idempotency_key="py-1").status == "running"
    assert _retry_rounds(execution) == 1
    with pytest.raises(workflows_api.IdempotencyConflict, match="py-1"):
        handle.retry("review", idempotency_key="py-1")
    with pytest.raises(workflows_api.InvalidInput):
        handle.retry(idempotency_key="")


def test_the_schema_documents_the_key_on_replay_and_retry(api) -> None:
    paths = api.get("/schema", {"format": "json"}).json()["paths"]
    for action in ("retry", "replay"):
        operation = paths[f"/executions/{{execution_id}}/{action}"]["post"]
        header = next(p for p in operation["parameters"] if p["name"] == "Idempotency-Key")
        assert header["in"] == "header"
        assert header["schema"]["minLength"] == 1
        assert "409" in operation["responses"]
