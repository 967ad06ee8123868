"""Pools and concurrency keys in the admin as a person sees them, in a real browser, on
real workers: the Pools list with the slots that running and held attempts use, a pool's
slots changed on its page (which lets the held node run), the console of an execution
held by its concurrency key, and of one whose node waits for a full pool.

Screenshots go to var/screenshots/admin-pool*.png and console-held-*.png.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from executions.models import Attempt, AttemptStatus, Execution
from executions.services.control import execution_cancel
from executions.services.pools import pool_create
from executions.services.start import execution_start
from tests.browser.test_admin__console import log_in, open_execution, pictured, wait_until
from tests.factories import make_version, start
from tests.integration.engine import Engine
from workflows.models import Pool

pytestmark = pytest.mark.django_db(transaction=True)


def unique(prefix: str) -> str:
    # The engine's database outlives a test's rows only as far as the workers see them:
    # unique names keep one test's pool and workflow from another's.
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def message(chrome) -> str:
    return " ".join(m.text for m in chrome.find_elements(By.CSS_SELECTOR, "ul.messagelist li"))


def pool_row(chrome, name: str) -> dict[str, str]:
    """The list's cells of the pool `name`, by column."""
    link = chrome.find_element(By.LINK_TEXT, name)
    row = link.find_element(By.XPATH, "./ancestor::tr")
    cells = row.find_elements(By.CSS_SELECTOR, "td, th")
    return {
        cell.get_attribute("class").split("field-")[-1].split()[0]: cell.text
        for cell in cells
        if "field-" in (cell.get_attribute("class") or "")
    }


def why(chrome, node: str) -> list[tuple[str, str]]:
    row = chrome.find_element(By.CSS_SELECTOR, f"#wf-nodes tr[data-node-id={node}]")
    reasons = row.find_elements(By.CSS_SELECTOR, ".wf-why")
    return [(r.get_attribute("data-code"), r.text) for r in reasons]


def trainer(pool: str, seconds: float) -> dict:
    return {
        "nodes": [
            {
                "id": "train",
                "type": "function",
                "function": "std.sleep",
                "input": {"seconds": seconds},
                "pool": pool,
            }
        ]
    }


def attempt_of(execution: Execution) -> Attempt | None:
    return Attempt.objects.filter(execution=execution, node_id="train").first()


def test_a_full_pool_in_its_list_on_its_page_and_in_the_console(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    gpu, spare = unique("gpu"), unique("spare")
    pool_create(name=gpu, slots=1, description="the one GPU box", by="ada")
    pool_create(name=spare, slots=3, by="ada")
    running = start(trainer(gpu, 120))
    wait_until(
        chrome,
        lambda: getattr(attempt_of(running), "status", None) == AttemptStatus.RUNNING,
        "the first trainer never took the slot",
    )
    held = start(trainer(gpu, 0.1))
    wait_until(chrome, lambda: attempt_of(held) is not None, "the second never scheduled")
    assert attempt_of(held).status == AttemptStatus.SCHEDULED
    log_in(chrome, live_server)

    # (1) The list: what the attempt rows hold, one pool full, the other idle.
    chrome.get(f"{live_server.url}/admin/workflows/pool/")
    row, idle = pool_row(chrome, gpu), pool_row(chrome, spare)
    assert (row["slots"], row["used"], row["free"], row["waiting"]) == ("1", "1", "0", "1"), row
    assert (idle["slots"], idle["used"], idle["free"], idle["waiting"]) == ("3", "0", "3", "0")
    chrome.save_screenshot(str(screenshots / "admin-pools.png"))

    # (3) The held node's console: why names the pool and its use.
    open_execution(chrome, live_server, held)
    wait_until(chrome, lambda: why(chrome, "train"), "no reason shown")
    [(code, text)] = why(chrome, "train")
    assert code == "pool_full"
    assert text == f"waiting for a free slot in pool {gpu} (1 of 1 slots in use)"
    assert pictured(chrome) == {"train": "scheduled"}
    # On the timeline it waits in the queue (for a worker), not for an answer.
    bars = "#wf-timeline g[data-node-id=train] rect"
    assert chrome.find_elements(By.CSS_SELECTOR, f"{bars}.tl-queued")
    assert not chrome.find_elements(By.CSS_SELECTOR, f"{bars}.tl-wait")
    chrome.save_screenshot(str(screenshots / "console-held-pool.png"))

    # The pool's page: two slots, saved, and the held node runs at once.
    chrome.get(f"{live_server.url}/admin/workflows/pool/{Pool.objects.get(name=gpu).pk}/change/")
    page = chrome.find_element(By.ID, "content").text
    assert f"{gpu} (1 slot)" in page
    assert "the one GPU box" in page
    assert "More release waiting attempts at once" in page  # what a change does
    slots = chrome.find_element(By.NAME, "slots")
    assert slots.get_attribute("value") == "1"
    chrome.save_screenshot(str(screenshots / "admin-pool-change.png"))
    slots.clear()
    slots.send_keys("2")
    chrome.find_element(By.NAME, "_save").click()
    wait_until(chrome, lambda: "was changed successfully" in message(chrome), "not saved")
    assert Pool.objects.get(name=gpu).slots == 2
    wait_until(
        chrome,
        lambda: Execution.objects.get(pk=held.pk).status == "succeeded",
        "the held node never ran after the pool grew",
    )
    chrome.refresh()
    row = pool_row(chrome, gpu)
    assert (row["slots"], row["used"], row["free"], row["waiting"]) == ("2", "1", "1", "0"), row
    chrome.save_screenshot(str(screenshots / "admin-pool-saved.png"))
    execution_cancel(execution_id=running.pk, by="test")
    assert engine.wait(running.pk).status == "cancelled"


GATES = {
    "nodes": [
        {"id": "gate", "type": "approval"},
        {"id": "after", "type": "function", "function": "std.noop", "depends_on": ["gate"]},
    ],
    "concurrency": {"key": "{{ input.customer }}", "limit": 1},
}


def test_an_execution_held_by_its_concurrency_key_in_the_console(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    version = make_version(GATES, name=unique("per-customer"))
    first, _ = execution_start(version=version, input={"customer": "acme"})
    held, _ = execution_start(version=version, input={"customer": "acme"}, priority=7)
    assert Execution.objects.get(pk=first.pk).status == "running"
    assert Execution.objects.get(pk=held.pk).status == "pending"
    log_in(chrome, live_server)

    open_execution(chrome, live_server, held)
    assert chrome.find_element(By.ID, "wf-status").text == "pending"
    assert chrome.find_element(By.ID, "wf-priority").text == "7"
    key = chrome.find_element(By.ID, "wf-concurrency")
    assert key.text.startswith("acme")
    assert key.find_element(By.CSS_SELECTOR, ".wf-badge").text == "held"
    expected = (
        "the workflow's concurrency key 'acme' has 1 of 1 executions running; "
        "it is next (first in, first out)"
    )
    for node in ("gate", "after"):
        assert why(chrome, node) == [("concurrency_limit", expected)], node
    chrome.save_screenshot(str(screenshots / "console-held-concurrency.png"))
    chrome.set_window_size(1400, 1600)
    chrome.save_screenshot(str(screenshots / "console-held-concurrency-full.png"))
    chrome.set_window_size(1400, 900)

    for execution in (held, first):
        execution_cancel(execution_id=execution.pk, by="test")
        assert engine.wait(execution.pk).status == "cancelled"
