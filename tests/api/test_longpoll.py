"""GET /executions/{id}/events: keyset pages by seq, and the long poll (?wait=S)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from executions import longpoll
from executions.longpoll import wait_for_rows
from executions.models import Event
from executions.services import control
from tests.factories import start

APPROVAL = {
    "nodes": [
        {"id": "review", "type": "approval"},
        {"id": "hold", "type": "delay", "seconds": 3600, "depends_on": ["review"]},
    ]
}


@pytest.mark.django_db(transaction=True)
def test_a_long_poll_answers_with_the_event_that_arrives_while_it_waits(api, monkeypatch) -> None:
    execution = start(APPROVAL)
    last = execution.last_seq
    gate = threading.Event()

    def approve_later() -> None:
        try:
            gate.wait(30)
            control.signal_send(
                execution_id=execution.pk, node_id="review", decision="approve", by="ops"
            )
        finally:
            connection.close()  # this thread's own connection

    helper = threading.Thread(target=approve_later)
    helper.start()
    original = longpoll.pause

    def pause(seconds: float) -> None:
        gate.set()  # the poll looked and found nothing: now the approval is sent
        original(seconds)

    monkeypatch.setattr(longpoll, "pause", pause)
    try:
        response = api.get(f"/executions/{execution.pk}/events", {"after_seq": last, "wait": 30})
    finally:
        gate.set()
        helper.join()
    assert response.status_code == 200, response.content
    types = [event["type"] for event in response.json()["results"]]
    assert types[0] == "signal_received"
    assert all(event["seq"] > last for event in response.json()["results"])


@pytest.mark.django_db
def test_a_long_poll_with_nothing_new_answers_an_empty_page(api) -> None:
    execution = start(APPROVAL)
    url = f"/executions/{execution.pk}/events"
    response = api.get(url, {"after_seq": execution.last_seq, "wait": 1})
    assert response.status_code == 200
    assert response.json() == {"next": None, "previous": None, "results": []}
    # An event already there: no waiting at all.
    assert len(api.get(url, {"after_seq": 0, "wait": 30}).json()["results"]) == execution.last_seq


@pytest.mark.django_db
@pytest.mark.parametrize("wait", ["31", "-1", "1.5", "", "x"])
def test_wait_is_bounded(api, wait) -> None:
    execution = start(APPROVAL)
    response = api.get(f"/executions/{execution.pk}/events", {"wait": wait})
    assert response.status_code == 400
    assert "wait" in response.json()


@pytest.mark.django_db
def test_events_page_by_seq_without_counting(api) -> None:
    execution = start(APPROVAL)
    control.signal_send(execution_id=execution.pk, node_id="review", decision="approve")
    total = Event.objects.filter(execution=execution).count()
    assert total >= 4
    url, seen = f"http://testserver/executions/{execution.pk}/events?limit=2", []
    while url:
        page = api.get(url).json()
        assert set(page) == {"next", "previous", "results"}
        seen += [event["seq"] for event in page["results"]]
        url = page["next"]
        if url:
            assert f"after_seq={seen[-1]}" in url
            assert "offset" not in url
    assert seen == list(range(1, total + 1))


@pytest.mark.django_db(transaction=True)
def test_the_connection_is_closed_while_sleeping() -> None:
    execution = start(APPROVAL)
    looks: list[bool] = []

    def sleep(seconds: float) -> None:
        looks.append(connection.connection is None)

    moments = iter([0.0, 0.0, 0.1, 0.2, 0.3, 5.0])
    found = wait_for_rows(
        Event.objects.filter(execution=execution, seq__gt=execution.last_seq),
        seconds=1,
        clock=lambda: next(moments),
        sleep=sleep,
    )
    assert found is False
    assert looks == [True, True, True, True]
