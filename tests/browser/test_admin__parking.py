"""A parked node in the execution console, on real workers: its row shows the status and
why, and its two actions (retry, fail) go through the confirmation page to the service.

Screenshots go to var/screenshots/console-parked*.png for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from executions.models import Event, Task
from tests.browser.test_admin__console import (
    left,
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
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

#: Two quick attempts, then parked (both definitions below).
PARK = {"max_attempts": 2, "initial_interval_seconds": 0.2, "on_exhausted": "park"}

DEFINITION = {
    "retry_policy": PARK,
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


MAP = {
    "retry_policy": PARK,
    "nodes": [
        {
            "id": "cards",
            "type": "function",
            "function": "std.echo",
            "input": [{"message": "card 1 declined"}, {"message": "card 2 declined"}],
        },
        {
            "id": "charge_each",
            "type": "map",
            "depends_on": ["cards"],
            "items": "nodes.cards.output",
            "node": {"type": "function", "function": "std.fail", "input": "{{ item }}"},
        },
    ],
}


def press_item(chrome, action: str, item: str) -> None:
    """An item's button in its map's row, then "Yes" on the confirmation page."""
    chrome.find_element(
        By.CSS_SELECTOR, f'#wf-nodes a[data-action={action}][data-node="{item}"]'
    ).click()
    chosen = chrome.find_element(By.CSS_SELECTOR, "#wf-confirm-form select[name=node]")
    assert chosen.get_attribute("value") == item  # the page asks about that item
    chrome.find_element(By.CSS_SELECTOR, "#wf-confirm-form input[type=submit]").click()
    left(chrome, "#wf-confirm-form")


def item_buttons(chrome, map_id: str) -> dict[str, list[str]]:
    """item -> its buttons' actions, as the map's row shows them."""
    row = chrome.find_element(By.CSS_SELECTOR, f"#wf-nodes tr[data-node-id={map_id}]")
    return {
        item.get_attribute("data-item"): [
            a.get_attribute("data-action") for a in item.find_elements(By.CSS_SELECTOR, "a")
        ]
        for item in row.find_elements(By.CSS_SELECTOR, ".wf-parked-item")
    }


def test_a_parked_map_item_is_retried_then_failed_from_its_maps_row(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    execution = start(MAP)
    wait_for(execution, "charge_each[0]", "parked", timeout=60)
    wait_for(execution, "charge_each[1]", "parked", timeout=60)
    log_in(chrome, live_server)
    open_execution(chrome, live_server, execution)
    assert status_badge(chrome) == "running"
    assert pictured(chrome) == {"cards": "succeeded", "charge_each": "running"}
    row = chrome.find_element(By.CSS_SELECTOR, "#wf-nodes tr[data-node-id=charge_each]")
    assert "2 items: 2 parked" in row.text
    assert "0 of 2 items done; 2 parked, waiting for an operator's retry or fail" in row.text
    assert item_buttons(chrome, "charge_each") == {
        "charge_each[0]": ["retry_parked", "fail_parked"],
        "charge_each[1]": ["retry_parked", "fail_parked"],
    }
    bar = chrome.find_element(By.ID, "wf-actions")
    assert bar.find_element(By.CSS_SELECTOR, "a[data-action=retry_parked]").text == (
        "Retry parked node"
    )
    chrome.save_screenshot(str(screenshots / "console-parked-map.png"))

    press_item(chrome, "retry_parked", "charge_each[1]")
    assert "Parked node charge_each[1]: another round of attempts starts." in message(chrome)
    wait_until(
        chrome,
        lambda: (
            Event.objects.filter(
                execution=execution, type="task_parked", node_id="charge_each[1]"
            ).count()
            == 2
        ),
        "the item's second round never parked",
    )
    chrome.refresh()
    assert set(item_buttons(chrome, "charge_each")) == {"charge_each[0]", "charge_each[1]"}

    press_item(chrome, "fail_parked", "charge_each[0]")
    assert "Parked node charge_each[0]: it fails for good." in message(chrome)
    # The map waits for its other item, still parked: only that one keeps its buttons.
    assert status_badge(chrome) == "running"
    row = chrome.find_element(By.CSS_SELECTOR, "#wf-nodes tr[data-node-id=charge_each]")
    assert "2 items: 1 failed, 1 parked" in row.text
    assert "1 of 2 items done; 1 parked, waiting for an operator's retry or fail" in row.text
    assert item_buttons(chrome, "charge_each") == {
        "charge_each[1]": ["retry_parked", "fail_parked"]
    }
    chrome.save_screenshot(str(screenshots / "console-parked-map-one-failed.png"))
    press_item(chrome, "fail_parked", "charge_each[1]")
    assert "Parked node charge_each[1]: it fails for good." in message(chrome)
    done = engine.wait(execution.pk)
    assert done.status == "failed"
    chrome.refresh()
    assert status_badge(chrome) == "failed"
    assert pictured(chrome)["charge_each"] == "failed"
    assert item_buttons(chrome, "charge_each") == {}
    unparked = Event.objects.filter(execution=done, type="task_unparked").order_by("seq")
    assert [(e.node_id, e.data["action"], e.data["by"]) for e in unparked] == [
        ("charge_each[1]", "retry", "root"),
        ("charge_each[0]", "fail", "root"),
        ("charge_each[1]", "fail", "root"),
    ]
    chrome.save_screenshot(str(screenshots / "console-parked-map-failed.png"))
    assert_replayable(done)


def test_a_map_with_more_parked_items_than_its_row_lists(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    """Twelve parked items: the row lists the first ten by index (not `[10]` before `[2]`)
    and links the rest to the confirmation page, whose list holds every one."""
    definition = {
        "retry_policy": {"max_attempts": 1, "on_exhausted": "park"},
        "nodes": [
            {"id": "cards", "type": "function", "function": "std.echo", "input": list(range(12))},
            {
                "id": "charge_each",
                "type": "map",
                "depends_on": ["cards"],
                "items": "nodes.cards.output",
                "node": {"type": "function", "function": "std.fail"},
            },
        ],
    }
    execution = start(definition)
    items = [f"charge_each[{n}]" for n in range(12)]
    parked = Task.objects.filter(execution=execution, status="parked")
    eventually(lambda: parked.count() == 12, 60, "the 12 items never all parked")
    log_in(chrome, live_server)
    open_execution(chrome, live_server, execution)
    assert list(item_buttons(chrome, "charge_each")) == items[:10]
    row = chrome.find_element(By.CSS_SELECTOR, "#wf-nodes tr[data-node-id=charge_each]")
    assert "and 2 more parked: choose one" in row.text
    chrome.execute_script("arguments[0].scrollIntoView()", row)
    chrome.save_screenshot(str(screenshots / "console-parked-map-many.png"))

    row.find_element(By.LINK_TEXT, "choose one").click()
    wait_until(chrome, lambda: chrome.find_elements(By.ID, "wf-confirm-form"), "the form")
    choice = Select(chrome.find_element(By.CSS_SELECTOR, "#wf-confirm-form select[name=node]"))
    assert [o.get_attribute("value") for o in choice.options] == items
    choice.select_by_value("charge_each[11]")
    chrome.save_screenshot(str(screenshots / "console-parked-map-choose.png"))
    chrome.find_element(By.CSS_SELECTOR, "#wf-confirm-form input[type=submit]").click()
    left(chrome, "#wf-confirm-form")
    assert "Parked node charge_each[11]: another round of attempts starts." in message(chrome)
    unparked = Event.objects.get(execution=execution, type="task_unparked")
    assert (unparked.node_id, unparked.data["action"]) == ("charge_each[11]", "retry")
