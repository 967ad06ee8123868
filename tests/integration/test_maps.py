"""`map` nodes on real workers: one item task per item, bounded parallelism, ordered output."""

from __future__ import annotations

from executions.models import Task
from tests.factories import events, start


def test_map_fans_out_over_items_and_collects_outputs_in_order(live) -> None:
    execution = start(
        {
            "nodes": [
                {
                    "id": "users",
                    "type": "function",
                    "function": "std.echo",
                    "input": ["ada", "bob", "cy", "dee", "eve"],
                },
                {
                    "id": "greet",
                    "type": "map",
                    "depends_on": ["users"],
                    "items": "nodes.users.output",
                    "max_parallel": 2,
                    "node": {
                        "type": "function",
                        "function": "std.sleep",
                        "input": {"seconds": 0.2, "name": "{{ item }}", "index": "{{ index }}"},
                    },
                },
                {
                    "id": "count",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["greet"],
                    "input": "{{ length(nodes.greet.output) }}",
                },
            ]
        }
    )
    done = live.wait(execution.pk, timeout=60)
    assert done.status == "succeeded", done.error
    greet = Task.objects.get(execution=done, node_id="greet")
    assert [item["name"] for item in greet.output] == ["ada", "bob", "cy", "dee", "eve"]
    assert [item["index"] for item in greet.output] == [0, 1, 2, 3, 4]
    items = Task.objects.filter(execution=done, node_id__startswith="greet[")
    assert sorted(items.values_list("node_id", flat=True)) == [f"greet[{i}]" for i in range(5)]
    assert set(items.values_list("status", flat=True)) == {"succeeded"}
    assert done.output == {"count": 5}
    # Never more than max_parallel items in flight: replay the log's starts and ends.
    in_flight = peak = 0
    for event in events(done):
        if event.node_id and event.node_id.startswith("greet["):
            if event.type == "task_scheduled":
                in_flight += 1
                peak = max(peak, in_flight)
            elif event.type == "task_completed":
                in_flight -= 1
    assert peak == 2


def test_a_failed_item_fails_the_map(live) -> None:
    execution = start(
        {
            "nodes": [
                {
                    "id": "each",
                    "type": "map",
                    "items": "input.items",
                    "node": {
                        "type": "function",
                        "function": "std.fail",
                        "input": {"message": "bad {{ item }}", "retryable": False},
                    },
                }
            ]
        },
        {"items": [1]},
    )
    done = live.wait(execution.pk)
    assert done.status == "failed"
    assert done.error["cause"]["type"] == "MapItemFailed"
    assert done.error["cause"]["cause"]["message"] == "bad 1"
