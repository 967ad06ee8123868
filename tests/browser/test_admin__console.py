"""The execution console in a real browser, on real workers: a finished, a failed and a
running execution, their pictures, and the buttons an operator presses.

Screenshots go to var/screenshots/console-*.png for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from executions.models import Event, Execution
from executions.services.control import signal_send
from tests.factories import start
from tests.integration.engine import Engine
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)

#: How long a page may take to show what real workers did (they run on a loaded machine).
PATIENCE = 60


def log_in(chrome, live_server) -> None:
    get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    chrome.get(f"{live_server.url}/admin/login/?next=/admin/")
    chrome.find_element(By.NAME, "username").send_keys("root")
    chrome.find_element(By.NAME, "password").send_keys("pw-root")
    chrome.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait_until(chrome, lambda: "Site administration" in chrome.title, "the login did not land")


def open_execution(chrome, live_server, execution: Execution) -> None:
    chrome.get(f"{live_server.url}/admin/executions/execution/{execution.pk}/change/")


def pictured(chrome) -> dict[str, str]:
    """node id -> status, as the DAG's SVG draws them."""
    nodes = chrome.find_elements(By.CSS_SELECTOR, "svg#wf-dag g.wf-node")
    return {n.get_attribute("data-node-id"): n.get_attribute("data-status") for n in nodes}


def wait_until(chrome, condition, message: str) -> None:
    """The live view replaces the picture under the reader: a stale element (an exception
    from the condition) is retried like a false one."""
    eventually(condition, PATIENCE, message, interval=0.2)


def left(chrome, selector: str) -> None:
    """Wait until the POST's answer (a redirect) has replaced the confirmation page."""
    eventually(
        lambda: not chrome.find_elements(By.CSS_SELECTOR, selector),
        PATIENCE,
        f"the page still shows {selector}",
        interval=0.1,
    )


def press(chrome, action: str, node: str | None = None) -> None:
    """A button of the page (or a node's row), then "Yes" on the confirmation page."""
    if node is None:
        chrome.find_element(By.CSS_SELECTOR, f"#wf-actions a[data-action={action}]").click()
    else:
        row = chrome.find_element(By.CSS_SELECTOR, f"#wf-nodes tr[data-node-id={node}]")
        row.find_element(By.CSS_SELECTOR, f"a[data-action={action}]").click()
    chrome.find_element(By.CSS_SELECTOR, "#wf-confirm-form input[type=submit]").click()
    left(chrome, "#wf-confirm-form")


def message(chrome) -> str:
    return " ".join(m.text for m in chrome.find_elements(By.CSS_SELECTOR, "ul.messagelist li"))


def status_badge(chrome) -> str:
    return chrome.find_element(By.ID, "wf-status").text


def test_a_finished_execution_with_a_map_and_a_sub_workflow(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    child = {"nodes": [{"id": "greet", "type": "function", "function": "std.echo"}]}
    from tests.factories import make_version

    make_version(child, name="console-child")
    execution = start(
        {
            "nodes": [
                {"id": "prep", "type": "function", "function": "std.echo", "input": [1, 2, 3]},
                {
                    "id": "fan",
                    "type": "map",
                    "depends_on": ["prep"],
                    "items": "nodes.prep.output",
                    "node": {"type": "function", "function": "std.echo", "input": "{{ item }}"},
                },
                {
                    "id": "sub",
                    "type": "workflow",
                    "workflow": "console-child",
                    "depends_on": ["prep"],
                },
                {"id": "pause", "type": "delay", "seconds": 1, "depends_on": ["prep"]},
                {
                    "id": "done",
                    "type": "function",
                    "function": "std.noop",
                    "depends_on": ["fan", "sub", "pause"],
                },
            ]
        }
    )
    finished = engine.wait(execution.pk)
    assert finished.status == "succeeded"
    log_in(chrome, live_server)
    open_execution(chrome, live_server, finished)
    chrome.save_screenshot(str(screenshots / "console-succeeded.png"))
    assert pictured(chrome) == dict.fromkeys(["prep", "fan", "sub", "pause", "done"], "succeeded")
    fan = chrome.find_element(By.CSS_SELECTOR, "g.wf-node[data-node-id=fan]")
    assert "3/3" in fan.text  # the map's items, folded into it
    assert len(fan.find_elements(By.CSS_SELECTOR, "rect.wf-item.wf-succeeded")) == 1
    timeline = chrome.find_element(By.ID, "wf-timeline")
    assert timeline.find_elements(By.CSS_SELECTOR, "rect.tl-timer")  # the delay's timer
    chrome.set_window_size(1400, 2600)  # the whole page, for a person to look at
    chrome.save_screenshot(str(screenshots / "console-succeeded-full.png"))
    chrome.set_window_size(1400, 900)
    # The sub-workflow node links to its child execution.
    chrome.find_element(By.CSS_SELECTOR, "g.wf-node[data-node-id=sub] a").click()
    wait_until(chrome, lambda: "console-child" in chrome.title + chrome.page_source, "child page")
    assert pictured(chrome) == {"greet": "succeeded"}
    assert "parent" in chrome.find_element(By.CSS_SELECTOR, ".wf-facts").text


def test_a_failed_execution_retried_then_replayed_from_a_node(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "fetch", "type": "function", "function": "std.echo", "input": {"n": 1}},
                {
                    "id": "flaky",
                    "type": "function",
                    "function": "std.fail",
                    "input": {"message": "upstream said no", "retryable": True},
                    "depends_on": ["fetch"],
                    "retry_policy": {"max_attempts": 3, "initial_interval_seconds": 0.3},
                },
                {
                    "id": "after",
                    "type": "function",
                    "function": "std.noop",
                    "depends_on": ["flaky"],
                },
            ]
        }
    )
    failed = engine.wait(execution.pk)
    assert failed.status == "failed"
    log_in(chrome, live_server)
    open_execution(chrome, live_server, failed)
    chrome.save_screenshot(str(screenshots / "console-failed.png"))
    assert pictured(chrome) == {"fetch": "succeeded", "flaky": "failed", "after": "skipped"}
    assert status_badge(chrome) == "failed"
    flaky_bars = chrome.find_elements(
        By.CSS_SELECTOR, "#wf-timeline g[data-node-id=flaky] rect.tl-run.tl-failed"
    )
    assert len(flaky_bars) == 3  # each attempt
    backoffs = chrome.find_elements(
        By.CSS_SELECTOR, "#wf-timeline g[data-node-id=flaky] rect.tl-backoff"
    )
    assert len(backoffs) == 2  # the waits between them
    assert "upstream said no" in chrome.find_element(By.ID, "wf-nodes").text

    press(chrome, "retry", node="flaky")
    assert "Retry requested: node flaky" in message(chrome)
    assert Event.objects.get(execution=failed, type="retry_requested").data["by"] == "root"
    assert engine.wait(failed.pk).status == "failed"  # it fails again, as it must
    chrome.refresh()
    assert (
        len(chrome.find_elements(By.CSS_SELECTOR, "#wf-timeline g[data-node-id=flaky] rect.tl-run"))
        == 6
    )

    press(chrome, "replay", node="flaky")
    assert "Replay from node flaky started" in message(chrome), message(chrome)
    replay = Execution.objects.get(replay_of=failed)
    assert f"started as execution {replay.pk}" in message(chrome)
    assert str(replay.pk) in chrome.current_url
    engine.wait(replay.pk)
    chrome.refresh()
    # fetch kept its recorded output; flaky ran again.
    assert pictured(chrome) == {"fetch": "succeeded", "flaky": "failed", "after": "skipped"}
    reused = Event.objects.get(execution=replay, node_id="fetch", type="task_completed")
    assert reused.data["reused_from"] == str(failed.pk)
    chrome.save_screenshot(str(screenshots / "console-replayed.png"))


def test_a_running_execution_refreshes_live_is_approved_paused_resumed_then_cancelled(
    chrome, live_server, engine: Engine, screenshots: Path
) -> None:
    execution = start(
        {
            "nodes": [
                {"id": "sign", "type": "approval"},
                {"id": "second", "type": "approval", "depends_on": ["sign"]},
                {
                    "id": "work",
                    "type": "function",
                    "function": "std.sleep",
                    "input": {"seconds": 120},
                },
                {
                    "id": "report",
                    "type": "function",
                    "function": "std.noop",
                    "depends_on": ["work", "second"],
                },
            ]
        }
    )
    log_in(chrome, live_server)
    open_execution(chrome, live_server, execution)
    wait_until(chrome, lambda: pictured(chrome).get("work") == "running", "work never ran")
    assert pictured(chrome)["sign"] == "waiting"
    chrome.save_screenshot(str(screenshots / "console-running.png"))

    # Live: an event recorded elsewhere (the API, another operator) redraws the picture.
    signal_send(execution_id=execution.pk, node_id="sign", decision="approve", by="ann")
    wait_until(chrome, lambda: pictured(chrome)["sign"] == "succeeded", "no live refresh")
    assert pictured(chrome)["second"] == "waiting"

    press(chrome, "approve", node="second")
    assert "second: approve recorded" in message(chrome)
    assert pictured(chrome)["second"] == "succeeded"
    signal = Event.objects.get(execution=execution, type="signal_received", node_id="second")
    assert signal.data["by"] == "root"

    press(chrome, "pause")
    assert "Paused" in message(chrome)
    assert status_badge(chrome) == "paused"
    report = chrome.find_element(By.CSS_SELECTOR, "#wf-nodes tr[data-node-id=report]")
    assert report.find_element(By.CSS_SELECTOR, ".wf-why[data-code=execution_paused]")
    chrome.save_screenshot(str(screenshots / "console-paused.png"))
    press(chrome, "resume")
    assert status_badge(chrome) == "running"

    press(chrome, "cancel")
    assert "Cancel requested" in message(chrome)
    wait_until(chrome, lambda: status_badge(chrome) == "cancelled", "never cancelled")
    assert pictured(chrome)["report"] in ("cancelled", "skipped")
    chrome.save_screenshot(str(screenshots / "console-cancelled.png"))
    assert engine.wait(execution.pk).status == "cancelled"


def test_bulk_cancel_from_the_list(chrome, live_server, engine: Engine, screenshots: Path) -> None:
    waiting = {"nodes": [{"id": "sign", "type": "approval"}]}
    first, second = start(waiting), start(waiting)
    log_in(chrome, live_server)
    chrome.get(f"{live_server.url}/admin/executions/execution/")
    for execution in (first, second):
        chrome.find_element(By.CSS_SELECTOR, f"input.action-select[value='{execution.pk}']").click()
    Select(chrome.find_element(By.NAME, "action")).select_by_value("cancel_selected")
    chrome.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    wait_until(chrome, lambda: chrome.find_elements(By.CSS_SELECTOR, ".wf-confirm"), "confirm")
    chrome.save_screenshot(str(screenshots / "console-bulk-confirm.png"))
    chrome.find_element(By.CSS_SELECTOR, ".wf-confirm input[type=submit]").click()
    left(chrome, ".wf-confirm")
    assert "Cancel: 2 accepted, 0 skipped" in message(chrome)
    chrome.save_screenshot(str(screenshots / "console-list.png"))
    for execution in (first, second):
        assert engine.wait(execution.pk).status == "cancelled"
