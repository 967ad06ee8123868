"""A parked node in the execution console, on real workers: its row shows the status and
why, and its two actions (retry, fail) go through the confirmation page to the service.

Screenshots go to var/screenshots/console-parked*.png for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from executions.models import Event, Task
from tests.browser.test_admin__console import (
    log_in,
    message,
    open_execution,
    pictured,
    press,
    status_badge,
    wait_until,
)
from tests.factories import start
from tests.integration.engine import Engine, assert_replayable, wait_for

pytestmark = pytest.mark.django_db(transaction=True)

DEFINITION = {
    "retry_policy": {"max_attempts": 2, "initial_interval_seconds": 0.2, "on_exhausted": "park"},
    "nodes": [
        {
            "id": "book",
            "type": "function",
            "function": "std.echo",
            "compensation": {"type": "function", "function": "std.noop"},
        },
        {
            "id": "charge",
            "type": "function",
            "function": "std.fail",
            "input": {"message": "card declined", "retryable": True},
            "depends_on": ["book"],
        },
    ],
}


def row_actions(chrome, node: str) -> list[str]:
    row = chrome.find_element(By.CSS_SELECTOR, f"#wf-nodes tr[data-node-id={node}]")
    return [a.get_attribute("data-action") for a in row.find_elements(By.CSS_SELECTOR, "a")]


def test_a_parked_node_is_retried_then_failed_from_its_row(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    execution = start(DEFINITION)
    wait_for(execution, "charge", "parked", timeout=60)
    log_in(chrome, live_server)
    open_execution(chrome, live_server, execution)
    assert status_badge(chrome) == "running"
    assert pictured(chrome) == {"book": "succeeded", "charge": "parked"}
    assert {"retry_parked", "fail_parked"} <= set(row_actions(chrome, "charge"))
    assert "retry_parked" not in row_actions(chrome, "book")
    nodes = chrome.find_element(By.ID, "wf-nodes").text
    assert "out of attempts (2)" in nodes
    chrome.save_screenshot(str(screenshots / "console-parked.png"))

    press(chrome, "retry_parked", node="charge")
    assert "Parked node charge: another round of attempts starts." in message(chrome)
    # std.fail fails again: the second round runs out and parks again.
    wait_until(
        chrome,
        lambda: Event.objects.filter(execution=execution, type="task_parked").count() == 2,
        "the second round never parked",
    )
    chrome.refresh()
    assert pictured(chrome)["charge"] == "parked"

    press(chrome, "fail_parked", node="charge")
    assert "Parked node charge: it fails for good." in message(chrome)
    done = engine.wait(execution.pk)
    assert done.status == "failed"
    assert Task.objects.get(execution=done, node_id="book.compensation").status == "succeeded"
    chrome.refresh()
    assert status_badge(chrome) == "failed"
    assert pictured(chrome)["charge"] == "failed"
    unparked = Event.objects.filter(execution=done, type="task_unparked").order_by("seq")
    assert [(e.data["action"], e.data["by"]) for e in unparked] == [
        ("retry", "root"),
        ("fail", "root"),
    ]
    chrome.save_screenshot(str(screenshots / "console-parked-failed.png"))
    assert_replayable(done)
