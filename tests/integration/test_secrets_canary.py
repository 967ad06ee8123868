"""A canary secret, held by the real workers (WORKFLOW_SECRET_CANARY), used every way a
workflow can use one: echoed by a function, raised in an error, put in a URL that answers
404, sent in a header that the server echoes back (in a success and in a rejection). It
must reach the server, and then be found nowhere: not in any column of any table, not in
any API response or admin page about those executions, not in the worker and beat logs.
Dumping the context (`{{ @ }}`, `{{ @.secrets }}` ...) is refused when the workflow is made.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from executions.engine.chain import first_break
from executions.kernel.log import linked_events
from executions.models import Task
from tests.factories import start
from tests.integration.engine import CANARY
from tests.servers import Request, http_server

#: Found in a partial leak too (a cut excerpt, a prefix), not only in a whole one.
NEEDLES = (CANARY, CANARY[-10:])
ONCE = {"max_attempts": 1}


def respond(request: Request, seen: list[Request]) -> tuple[int, object]:
    if request.path.startswith("/items/"):
        return 404, {"detail": f"no such item: {request.path}"}
    if request.path == "/reject":
        return 400, {"rejected_headers": request.headers}
    return 200, {"your_headers": request.headers}


def http(url: str, **extra: object) -> dict:
    return {
        "nodes": [
            {
                "id": "call",
                "type": "http",
                "retry_policy": ONCE,
                "request": {"method": "GET", "url": url, **extra},
            }
        ]
    }


def workflows(base: str) -> dict[str, dict]:
    key = {"headers": {"X-Api-Key": "{{ secrets.CANARY }}"}}
    return {
        "echo": {
            "secrets": ["CANARY"],
            "nodes": [
                {
                    "id": "echo",
                    "type": "function",
                    "function": "std.echo",
                    "input": {"v": "{{ secrets.CANARY }}", "s": "Bearer {{ secrets.CANARY }}"},
                },
                {
                    "id": "after",
                    "type": "function",
                    "function": "std.echo",
                    "depends_on": ["echo"],
                    "input": {"copy": "{{ nodes.echo.output }}"},
                },
            ],
        },
        "raise": {
            "nodes": [
                {
                    "id": "boom",
                    "type": "function",
                    "function": "std.fail",
                    "retry_policy": ONCE,
                    "input": {"message": "refused {{ secrets.CANARY }}", "retryable": False},
                }
            ]
        },
        "url_404": http(base + "/items/{{ secrets.CANARY }}?key={{ secrets.CANARY }}"),
        "echoed_header": http(base + "/echo", **key),
        "rejected_header": http(base + "/reject", **key),
    }


def hits_in_tables(needles: tuple[str, ...] = NEEDLES) -> list[str]:
    """table.column for every column of every table that holds a needle (as text)."""
    found = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            for column in connection.introspection.get_table_description(cursor, table):
                cast = f'CAST("{column.name}" AS TEXT)'
                where = " OR ".join(f"{cast} LIKE %s" for _ in needles)
                cursor.execute(
                    f'SELECT COUNT(*) FROM "{table}" WHERE {where}', [f"%{n}%" for n in needles]
                )
                if cursor.fetchone()[0]:
                    found.append(f"{table}.{column.name}")
    return found


def leaks(text: str) -> bool:
    return any(needle in text for needle in NEEDLES)


def test_a_canary_secret_reaches_no_table_response_or_log(live) -> None:
    admin = get_user_model().objects.create_superuser(
        "canary-admin", "a@example.com", "pw-canary-admin"
    )
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin).key}")

    for expression in ("@", "@.secrets", "keys(@)", "secrets", "values(@)[0]"):
        node = {"id": "dump", "type": "function", "function": "std.echo"}
        body = {"nodes": [{**node, "input": {"all": f"{{{{ {expression} }}}}"}}]}
        response = api.post("/workflows", {"name": "dump", "definition": body}, format="json")
        assert response.status_code == 400, (expression, response.content)
        assert "dump" in response.content.decode()
        assert "input.all" in response.content.decode()
    # Nor can a new version of an existing workflow dump it.
    fine = {"nodes": [{"id": "n", "type": "function", "function": "std.noop"}]}
    created = api.post("/workflows", {"name": "canary-fine", "definition": fine}, format="json")
    assert created.status_code == 201, created.content
    dump = {"nodes": [{"id": "n", "type": "function", "function": "std.echo", "input": "{{ @ }}"}]}
    response = api.post(
        f"/workflows/{created.json()['id']}/versions", {"definition": dump}, format="json"
    )
    assert response.status_code == 400
    assert "whole context" in response.content.decode()

    with http_server(respond) as server:
        started = {name: start(d) for name, d in workflows(server.url).items()}
        done = {name: live.wait(execution.pk) for name, execution in started.items()}

    # The canary did reach the server, in a URL and in headers...
    assert any(CANARY in request.path for request in server.seen)
    assert sum(request.headers.get("X-Api-Key") == CANARY for request in server.seen) == 2
    # ...and the nodes saw it (recorded masked), so the search below is not vacuous.
    assert done["echo"].status == "succeeded"
    echoed = Task.objects.get(execution=done["echo"], node_id="echo").output
    assert echoed == {"v": "***", "s": "Bearer ***"}
    for name in ("raise", "url_404", "rejected_header"):
        assert done[name].status == "failed", (name, done[name].error)
        assert "***" in str(done[name].error), (name, done[name].error)
    assert done["echoed_header"].status == "succeeded"
    assert "***" in str(done["echoed_header"].output)

    assert hits_in_tables() == []
    # The search itself finds what is there: the masked value, in the log and projections.
    masked = hits_in_tables(("Bearer ***",))
    assert {"executions_event.data", "executions_task.output"} <= set(masked), masked

    client = APIClient()
    client.force_login(admin)
    for execution in done.values():
        base = f"/executions/{execution.pk}"
        urls = [base, f"{base}/tasks", f"{base}/events", f"{base}/state", f"{base}/why"]
        urls += [f"{base}/tasks/{node}" for node in ("echo", "after", "boom", "call")]
        urls += [f"/admin/executions/execution/{execution.pk}/change/"]
        for url in urls:
            response = api.get(url) if not url.startswith("/admin") else client.get(url)
            assert response.status_code < 500, (url, response.status_code)
            assert not leaks(response.content.decode()), url
        # Every recorded event is in the chain, masked values and all.
        assert first_break(linked_events(execution.pk), last_hash=execution.last_hash) is None
    for url in ["/executions", "/admin/executions/event/", "/admin/executions/task/"]:
        response = api.get(url) if not url.startswith("/admin") else client.get(url)
        assert not leaks(response.content.decode()), url
    call_command("verify_logs", *[str(e.pk) for e in done.values()])

    logs = "".join(path.read_text(errors="replace") for path in live.log_dir.glob("*.log"))
    assert not leaks(logs), [line for line in logs.splitlines() if leaks(line)][:5]
    # The workers did log those requests (httpx names each URL), masked.
    assert "/items/***" in logs


def test_a_nan_in_a_response_fails_the_node_cleanly_not_the_database(live) -> None:
    """JSON bodies may spell NaN; jsonb cannot hold it and the chain has no form for it."""
    with http_server(lambda request, seen: (200, {"ratio": float("nan")})) as server:
        done = live.wait(start(http(server.url + "/ratio")).pk)
    assert done.status == "failed"
    error = Task.objects.get(execution=done, node_id="call").error
    assert error["type"] == "InvalidOutput"
    assert error["retryable"] is False
    assert "output.body.ratio" in error["message"]
