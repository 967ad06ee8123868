"""The timeline's phases per attempt, read from events, and their placement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from executions.console.timeline import LABEL_WIDTH, Mark, spans, ticks, timeline

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def marks(*rows: tuple[str, int | None, str, float]) -> list[Mark]:
    return [Mark(node, attempt, kind, at(s)) for node, attempt, kind, s in rows]


def phases(found) -> list[tuple[str, int, str, str, float, float | None]]:
    return [
        (
            s.node_id,
            s.attempt,
            s.phase,
            s.outcome,
            (s.start - T0).total_seconds(),
            (s.end - T0).total_seconds() if s.end else None,
        )
        for s in found
    ]


def test_a_retried_node_shows_each_attempt_and_the_backoff_between() -> None:
    log = marks(
        ("f", 1, "task_scheduled", 0),
        ("f", 1, "task_started", 1),
        ("f", 1, "task_failed", 3),
        ("f", 1, "task_retry_scheduled", 3),
        ("f", 2, "timer_fired", 5),
        ("f", 2, "task_scheduled", 5),
        ("f", 2, "task_started", 6),
        ("f", 2, "task_completed", 7),
    )
    assert phases(spans(log)) == [
        ("f", 1, "queued", "failed", 0, 1),
        ("f", 1, "run", "failed", 1, 3),
        ("f", 1, "backoff", "succeeded", 3, 5),
        ("f", 2, "queued", "succeeded", 5, 6),
        ("f", 2, "run", "succeeded", 6, 7),
    ]


def test_timers_waits_and_open_attempts() -> None:
    log = marks(
        ("pause", 1, "timer_started", 0),
        ("pause", 1, "timer_fired", 10),
        ("pause", 1, "task_completed", 10),
        ("sign", 1, "task_scheduled", 10),  # an approval: never started by a worker
        ("work", 1, "task_scheduled", 10),
        ("work", 1, "task_started", 11),
        ("later", 1, "task_retry_scheduled", 12),  # the backoff is still running
        (
            "ignored",
            None,
            "task_scheduled",
            0,
        ),  # no attempt: not an attempt's event
    )
    assert phases(spans(log)) == [
        ("pause", 1, "timer", "succeeded", 0, 10),
        ("sign", 1, "wait", "open", 10, None),
        ("work", 1, "queued", "open", 10, 11),
        ("work", 1, "run", "open", 11, None),
        ("later", 1, "backoff", "open", 12, None),
    ]


def test_a_worker_attempt_not_claimed_yet_is_queued_not_waiting() -> None:
    """A function node held for a pool slot (or in the broker) waits for a worker, not
    for an answer: queued, open, beside an approval that waits."""
    log = marks(
        ("train", 1, "task_scheduled", 0),
        ("sign", 1, "task_scheduled", 0),
        ("cancelled", 1, "task_scheduled", 0),
        ("cancelled", 1, "task_cancelled", 4),  # ended before a worker claimed it
    )
    assert phases(spans(log, queued={"train", "cancelled"})) == [
        ("train", 1, "queued", "open", 0, None),
        ("sign", 1, "wait", "open", 0, None),
        ("cancelled", 1, "queued", "cancelled", 0, 4),
    ]


def test_duplicates_keep_the_first_time_whatever_the_order() -> None:
    log = marks(
        ("f", 1, "task_started", 4),
        ("f", 1, "task_started", 2),
        ("f", 1, "task_completed", 5),
    )
    assert phases(spans(log)) == [("f", 1, "run", "succeeded", 2, 5)]


def test_placement_on_a_shared_axis() -> None:
    log = marks(
        ("a", 1, "task_started", 0),
        ("a", 1, "task_completed", 10),
        ("b", 1, "task_started", 10),  # still running at now = 20
    )
    picture = timeline(log, now=at(20), width=LABEL_WIDTH + 8 + 200, rows=["b", "a"])
    assert [r.node_id for r in picture.rows] == ["b", "a"]
    (b,), (a,) = (r.bars for r in picture.rows)
    assert (a.x, a.width) == (LABEL_WIDTH, 100)
    assert (b.x, b.width) == (LABEL_WIDTH + 100, 100)
    assert a.css == "tl-run tl-succeeded"
    assert b.css == "tl-run tl-open"
    assert "now" in b.title
    assert "10s" in a.title
    assert picture.rows[0].y < picture.rows[1].y
    assert picture.ticks[0].label == "+0s"
    assert picture.ticks[0].x == LABEL_WIDTH


def test_an_instant_is_still_visible_and_nothing_is_an_empty_timeline() -> None:
    picture = timeline(marks(("a", 1, "task_started", 0), ("a", 1, "task_failed", 0)), now=at(0))
    assert picture.rows[0].bars[0].width >= 2
    assert timeline([], now=T0).rows == ()


def test_ticks_are_round_and_few() -> None:
    found = ticks(T0, at(95), 0, 950)
    labels = ["+0s", "+15s", "+30s", "+45s", "+1m", "+1.25m", "+1.5m"]
    assert [t.label for t in found] == labels
    assert len(ticks(T0, at(86400 * 30), 0, 950)) <= 9
