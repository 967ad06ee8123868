"""Rate buckets that are full again are forgotten by the sweeper, a page at a time: a
full bucket is what a claim makes for a key it has not seen, so the limit holds as before,
and the table does not keep a row for every key value ever seen. A bucket a claim holds
is skipped, never waited for, and a claim that loses its bucket to the delete makes
another (on PostgreSQL, with another connection holding the locks)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction

from executions.kernel.rates import rate_dispatch, rate_forget
from executions.models import Attempt, RateBucket
from executions.services.attempts import attempt_claim, attempt_complete
from executions.services.sweep import sweep
from tests.api.test_purge__locks import held
from tests.api.test_rate_limits import T0, claim_all, clock, limited, sent, waiting
from tests.factories import start
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["clock", "sent"]  # fixtures, used by name

postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'")


def keys() -> set[str]:
    return set(RateBucket.objects.values_list("key", flat=True))


def finish(execution) -> None:
    for row in Attempt.objects.filter(execution=execution, status="running"):
        attempt_complete(attempt_id=row.pk, worker_id="w1", output=None)


def test_full_idle_buckets_are_forgotten_and_the_limit_holds_after(clock, sent) -> None:
    # 1 a second, burst 1: a bucket that gave its token is full again a second later.
    acme = start(limited(3, key="{{ input.account }}", burst=1, per_second=1), {"account": "acme"})
    globex = start(limited(1, key="{{ input.account }}", burst=1, per_second=1), {"account": "g"})
    assert claim_all(acme) == ["n0"]
    assert claim_all(globex) == ["n0"]
    assert waiting(acme) == ["n1", "n2"]
    assert keys() == {"key:acme", "key:g"}

    clock.now = T0 + timedelta(seconds=0.5)  # neither is full yet
    assert rate_forget(after=None, count=100) == (0, None)
    clock.now = T0 + timedelta(seconds=10)
    # Both full, but acme's has attempts held for it: its dispatch needs it.
    assert rate_forget(after=None, count=100) == (1, None)
    assert keys() == {"key:acme"}

    # The sweeper releases acme's held attempts as its tokens allow, and forgets its
    # bucket once it is full and nothing waits.
    for step in range(2):
        clock.now = T0 + timedelta(seconds=10 + step)
        assert rate_dispatch(key="key:acme") == 1
        assert len(claim_all(acme)) == 1
    assert waiting(acme) == []
    finish(acme)
    finish(globex)
    clock.now = T0 + timedelta(seconds=11.5)
    assert sweep().buckets_forgotten == 0  # took its last token half a second ago
    clock.now = T0 + timedelta(seconds=12)
    assert sweep().buckets_forgotten == 1
    assert keys() == set()

    # A key seen again starts from a full bucket, as the first time: burst 1, then wait.
    again = start(limited(2, key="{{ input.account }}", burst=1, per_second=1), {"account": "g"})
    assert claim_all(again) == ["n0"]
    assert waiting(again) == ["n1"]
    bucket = RateBucket.objects.get()
    assert (bucket.key, bucket.tokens, bucket.refilled_at) == ("key:g", 0.0, clock.now)


def test_the_sweeper_goes_round_the_buckets_a_page_at_a_time(clock, sent) -> None:
    for account in ("a", "b", "c"):
        execution = start(limited(1, key="{{ input.account }}", per_second=1), {"account": account})
        assert claim_all(execution) == ["n0"]
    clock.now = T0 + timedelta(seconds=5)
    assert rate_forget(after=None, count=2) == (2, "key:b")
    assert keys() == {"key:c"}
    assert rate_forget(after="key:b", count=2) == (1, None)  # a short page: round again
    assert keys() == set()


@postgres_only
def test_a_bucket_a_claim_holds_is_skipped_not_waited_for(clock, sent) -> None:
    for account in ("busy", "idle"):
        execution = start(limited(1, key="{{ input.account }}", per_second=1), {"account": account})
        assert claim_all(execution) == ["n0"]
    clock.now = T0 + timedelta(seconds=5)
    lock = "SELECT key FROM executions_ratebucket WHERE key = %s FOR UPDATE"
    with held(lock, "key:busy"):
        # Would block until the holder commits if it waited (the holder waits for us).
        assert rate_forget(after=None, count=100) == (1, None)
    assert keys() == {"key:busy"}
    assert rate_forget(after=None, count=100) == (1, None)
    assert keys() == set()


@postgres_only
def test_a_claim_whose_bucket_is_forgotten_under_it_makes_another(clock, sent) -> None:
    """The claim found the row (its insert did nothing) and waits for its lock while the
    sweeper deletes it: it must create it again, not fail to find it."""
    first = start(limited(1, key="{{ input.account }}", per_second=1), {"account": "acme"})
    assert claim_all(first) == ["n0"]
    clock.now = T0 + timedelta(seconds=5)
    later = start(limited(1, key="{{ input.account }}", per_second=1), {"account": "acme"})
    (attempt,) = Attempt.objects.filter(execution=later)

    locked, delete = threading.Event(), threading.Event()
    problems: list[BaseException] = []

    def forgetter() -> None:  # rate_forget's statements, with a pause between them
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT key FROM executions_ratebucket WHERE key = 'key:acme' FOR UPDATE"
                )
                locked.set()
                delete.wait(60)
                cursor.execute("DELETE FROM executions_ratebucket WHERE key = 'key:acme'")
        except BaseException as exc:  # reported below
            problems.append(exc)
            locked.set()
        finally:
            connections.close_all()

    claimed: list[object] = []

    def claimant() -> None:
        try:
            claimed.append(attempt_claim(attempt_id=attempt.pk, worker_id="w2"))
        except BaseException as exc:  # reported below
            problems.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=forgetter, daemon=True)]
    threads[0].start()
    assert locked.wait(30)
    assert not problems, problems
    threads.append(threading.Thread(target=claimant, daemon=True))
    threads[1].start()

    def claim_waits() -> bool:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            return cursor.fetchone()[0] > 0

    eventually(claim_waits, 30, "the claim waiting for the bucket's row lock")
    delete.set()
    for thread in threads:
        thread.join(60)
    assert not problems, problems
    assert len(claimed) == 1
    assert claimed[0] is not None  # it started, with the bucket made anew
    bucket = RateBucket.objects.get()
    assert (bucket.key, bucket.tokens) == ("key:acme", 0.0)
