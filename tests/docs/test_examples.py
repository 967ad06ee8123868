"""The documentation's examples are code that runs, so a renamed setting, field or function
breaks a test here rather than a reader's first try.

- Every workflow under docs/examples/workflows/ parses and validates with the engine's own
  parser and runs, through the real engine (workflows.testing), to the end its page
  describes (EXPECTED below says which: a new file needs an entry).
- The Python examples (a project's settings, URLconf, Celery app, functions, a start
  inside a transaction, a signal receiver, a test written with the harness) are executed.
- Every ```json or ```python block of a page is either a snippet include of a file that
  exists (`--8<-- "docs/examples/..."`) or marked illustrative, on the line before it,
  with ILLUSTRATIVE; every snippet include anywhere names a file that exists.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from django.db import transaction
from django.urls import URLResolver, get_resolver
from django.urls.resolvers import RegexPattern

from executions.models import Execution
from nodes import registry
from workflows import api
from workflows.dsl import parse_definition
from workflows.services import workflow_create
from workflows.testing import run

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
WORKFLOWS = EXAMPLES / "workflows"
#: The marker of a fenced block that is not meant to be copied as it stands (it names a
#: reader's own model, say): an HTML comment on the line before the fence, which may say
#: why after a colon (`<!-- illustrative: Stock stands for your model -->`).
ILLUSTRATIVE = "<!-- illustrative -->"
#: Pages generated from the code itself, which therefore cannot drift from it.
GENERATED = DOCS / "reference"
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$')
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
CHECKED_LANGUAGES = {"json", "python", "py", "jsonc"}


# --- loading the Python examples ------------------------------------------------------


def load(relative: str) -> ModuleType:
    """Execute docs/examples/<relative> as a module of its own (its decorators run)."""
    path = EXAMPLES / relative
    name = "docs_example_" + re.sub(r"\W", "_", relative.removesuffix(".py"))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None, path
    assert spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def example_functions() -> Iterator[Callable[[str], ModuleType]]:
    """Load an example module of workflow functions for one test; its registrations are
    undone after it, so no other test sees them."""
    before = set(registry.function_names())
    yield load
    for name in set(registry.function_names()) - before:
        registry.unregister(name)


def definition(name: str) -> dict[str, Any]:
    loaded = json.loads((WORKFLOWS / f"{name}.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


# --- the workflows --------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """How a page runs the workflow, and where it ends."""

    input: Any
    #: Example modules that define the functions it calls (docs/examples/...).
    modules: tuple[str, ...] = ()
    #: Stand-ins for functions the reader writes elsewhere (their pages show them).
    stand_ins: dict[str, Callable[[Any, Any], Any]] = field(default_factory=dict)
    #: What happens on the way, as calls on the harness's result: ("approve", node id),
    #: ("signal", name, data), ("advance", seconds).
    answers: tuple[tuple[Any, ...], ...] = ()
    status: str = "succeeded"
    output: Any = None
    #: Event types the page says the run records.
    recorded: tuple[str, ...] = ()
    #: The execution's error, where it ends failed.
    error: Any = None


def _total(input: Any, ctx: Any) -> dict[str, Any]:
    return {"total": sum(item["price"] for item in input["items"])}


def _sent(input: Any, ctx: Any) -> dict[str, Any]:
    return {"sent": True, **input}


def _report(input: Any, ctx: Any) -> dict[str, Any]:
    return {"rows": 3, "day": input["day"]}


def _charge(input: Any, ctx: Any) -> dict[str, Any]:
    """The payment provider is down for the first round of three attempts."""
    if ctx.attempt <= 3:
        raise ConnectionError("payment provider unavailable")
    return {"charged": input["amount"]}


EXPECTED: dict[str, Expected] = {
    # docs/tutorial/first-workflow.md
    "greeting": Expected(
        input={"name": "Ada"},
        modules=("first-workflow/greetings.py",),
        answers=(("approve", "review"),),
        output={"text": "Hello, Ada!", "reviewer_said": ""},
    ),
    # docs/tutorial/django-project.md
    "fulfil-order": Expected(
        input={"sku": "A-1", "quantity": 2, "price": 5},
        modules=("project/shop/workflow_functions.py",),
        output={"reserved": {"sku": "A-1", "reserved": 2, "key": "*"}, "charged": 10},
    ),
    # docs/how-to/testing-workflows.md (the host project's own definition file)
    "order-follow-up": Expected(
        input={"items": [{"price": 5}, {"price": 7}]},
        stand_ins={"shop.total": _total, "shop.remind": _sent},
        answers=(("approve", "review"),),
        output={"sent": True, "total": 12},
    ),
    # docs/how-to/retention.md
    "nightly-report": Expected(
        input={"day": "2030-01-01"},
        stand_ins={"reports.build": _report},
        output={"rows": 3, "day": "2030-01-01"},
    ),
    # docs/how-to/flow-control.md: a saga whose second step fails, undoing the first
    "book-trip": Expected(
        input={"seat": "12A"},
        status="failed",
        recorded=("compensation_scheduled",),
        error={
            "message": "node 'charge' failed",
            "nodes": ["charge"],
            "cause": {"type": "CardDeclined", "message": "card declined", "retryable": False},
            "compensations": {"hold_seat": "succeeded"},
        },
    ),
    # docs/how-to/flow-control.md
    "sync-customer": Expected(input={"customer_id": "c-7"}, output={"customer": "c-7"}),
    # docs/how-to/flow-control.md: a payment signal a week may take
    "await-payment": Expected(
        input={"amount": 12},
        answers=(("signal", "payment", {"amount": 12}),),
        output={"invoiced": 12, "paid": {"amount": 12}},
    ),
    # docs/how-to/flow-control.md: nobody answered within the day
    "expense-approval": Expected(
        input={"amount": 80},
        answers=(("advance", 86400),),
        output={"amount": 80, "timed_out": True},
        recorded=("approval_timed_out",),
    ),
    # docs/how-to/timeouts-tags-trigger-rules.md: no payment within the 900 seconds
    "order-with-deadline": Expected(
        input={"sku": "A-1"},
        answers=(("advance", 960),),
        status="failed",
        recorded=("workflow_timed_out", "compensation_scheduled"),
        error={
            "type": "WorkflowTimeout",
            "message": "*",
            "retryable": False,
            "deadline_at": "*",
            "timeout_seconds": 900,
            "cancelled": ["wait_for_payment", "ship"],
            "compensations": {"reserve": "succeeded"},
        },
    ),
    # docs/how-to/timeouts-tags-trigger-rules.md: the mirror is not used
    "trigger-rules": Expected(
        input={"use_mirror": False},
        output={
            "first_copy": "succeeded",
            "nothing_fetched": "skipped",
            "report": "succeeded",
            "audit": "succeeded",
        },
    ),
    # docs/how-to/secrets-permissions.md
    "partner-sync": Expected(
        input={"account": "acme"},
        modules=("project/shop/partner_functions.py",),
        answers=(("approve", "sign_off"),),
        output={"account": "acme", "authorized": True},
    ),
    # docs/how-to/parking-cancel-signal-with-start.md: parked, then retried by an operator
    "charge-or-park": Expected(
        input={"sku": "A-1", "amount": 30},
        stand_ins={"payments.charge": _charge},
        answers=(("retry_task", "charge"),),
        recorded=("task_parked", "task_unparked"),
        output={"sku": "A-1", "receipt": {"charged": 30}},
    ),
    # docs/how-to/parking-cancel-signal-with-start.md: two lines, the first one with the start
    "collect-order-lines": Expected(
        input={"cart": "c-9"},
        answers=(("signal", "line", {"sku": "A-1"}), ("signal", "line", {"sku": "B-2"})),
        output={"cart": "c-9", "lines": [{"sku": "A-1"}, {"sku": "B-2"}]},
    ),
    # docs/how-to/rate-limits-and-schedules.md: the input a schedule's fire renders
    "daily-report": Expected(
        input={"title": "Nightly report of 2026-03-02T02:00:00Z", "as_of": "2026-03-02T02:00:00Z"},
        output={"title": "Nightly report of 2026-03-02T02:00:00Z", "as_of": "2026-03-02T02:00:00Z"},
    ),
    # docs/how-to/rate-limits-and-schedules.md: a map whose items wait for their rate limit
    "sync-customers": Expected(
        input={"account": "acme", "customers": ["c-1", "c-2", "c-3"]},
        output=[{"customer": f"c-{n}", "account": "acme"} for n in (1, 2, 3)],
    ),
    # docs/how-to/rate-limits-and-schedules.md: a node that is its own bucket
    "nightly-export": Expected(input={"day": 1}, output={"export": {"of": {"day": 1}}}),
}


def workflow_files() -> list[str]:
    return sorted(path.stem for path in WORKFLOWS.glob("*.json"))


def test_every_workflow_example_says_where_it_ends() -> None:
    assert workflow_files() == sorted(EXPECTED), "add the new example to EXPECTED"


@pytest.mark.parametrize("name", workflow_files())
def test_the_workflow_example_parses_and_validates(name: str, example_functions) -> None:
    expected = EXPECTED[name]
    for module in expected.modules:
        example_functions(module)
    known = set(registry.function_names()) | set(expected.stand_ins)
    parsed = parse_definition(definition(name), function_exists=known.__contains__)
    assert parsed.nodes


@pytest.mark.django_db
@pytest.mark.parametrize("name", workflow_files())
def test_the_workflow_example_runs_to_its_documented_end(
    name: str, example_functions, settings
) -> None:
    settings.WORKFLOW_SECRETS = {"PARTNER_TOKEN": "s3cr3t-token-for-the-docs"}
    expected = EXPECTED[name]
    for module in expected.modules:
        example_functions(module)
    result = run(definition(name), expected.input, functions=expected.stand_ins)
    for call, *args in expected.answers:
        assert result.status == "running", (name, result.error)
        result = getattr(result, call)(*args)
    assert result.status == expected.status, (name, result.error)
    assert matches(result.output, expected.output), result.output
    assert matches(result.error, expected.error), result.error
    types = [event["type"] for event in result.events]
    assert all(kind in types for kind in expected.recorded), types
    # Nothing a secret is worth leaves the worker: no recorded value holds it.
    assert "s3cr3t-token-for-the-docs" not in json.dumps(result.events)


def matches(got: Any, want: Any) -> bool:
    """`want` with "*" standing for any value."""
    if want == "*":
        return True
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(matches(got[k], want[k]) for k in want)
        )
    return bool(got == want)


def test_every_example_file_is_valid_json_or_python() -> None:
    for path in EXAMPLES.rglob("*"):
        if path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".py":
            compile(path.read_text(), str(path), "exec")


# --- the Python examples ----------------------------------------------------------------


def test_the_settings_example_adds_the_engine_apps_as_a_host_needs() -> None:
    from tests.packaging.host_project import ENGINE_APPS

    namespace: dict[str, Any] = {}
    exec(compile((EXAMPLES / "project/settings.py").read_text(), "settings.py", "exec"), namespace)
    apps = [app for app in namespace["INSTALLED_APPS"] if app in ENGINE_APPS]
    assert apps == list(ENGINE_APPS)
    assert namespace["CELERY_WORKER_PREFETCH_MULTIPLIER"] == 1
    assert namespace["CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP"] is True
    assert namespace["CELERY_BROKER_TRANSPORT_OPTIONS"] == {"priority_steps": list(range(10))}


def test_the_urls_example_mounts_the_api_under_its_prefix() -> None:
    module = load("project/urls.py")
    resolver = URLResolver(RegexPattern(r"^/"), module)
    found = resolver.resolve("/engine/executions")
    assert found.view_name == "workflows:execution-list"
    # The same view the standalone project serves at its root.
    assert found.func.__name__ == get_resolver().resolve("/executions").func.__name__


def test_the_celery_example_reads_the_django_settings(settings) -> None:
    module = load("project/config/celery.py")
    assert module.app.main == "config"
    assert module.app.conf.broker_url == settings.CELERY_BROKER_URL


def test_the_config_package_example_loads_the_celery_app_with_django() -> None:
    """Without it, a process that is no worker (the web server, manage.py shell) publishes
    through Celery's default app, to a broker that is not the project's."""
    package = EXAMPLES / "project/config"
    name = "docs_example_project_config"
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        assert module.celery_app is sys.modules[f"{name}.celery"].app
        assert module.celery_app.main == "config"
    finally:
        for loaded in (name, f"{name}.celery"):
            sys.modules.pop(loaded, None)


def test_the_sqlite_settings_example_serializes_writers(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"BASE_DIR": tmp_path}
    source = (EXAMPLES / "project/settings_sqlite.py").read_text()
    exec(compile(source, "settings.py", "exec"), namespace)
    database = namespace["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]


@pytest.mark.django_db
def test_the_start_example_starts_if_and_only_if_its_block_commits(example_functions) -> None:
    example_functions("project/shop/workflow_functions.py")
    orders = load("project/shop/orders.py")
    workflow_create(name="fulfil-order", definition=definition("fulfil-order"), by="docs")

    def an_order_whose_own_write_fails() -> None:
        with transaction.atomic():
            orders.place_order("A-1", 2, 5)
            raise RuntimeError("the order's own write failed")

    with pytest.raises(RuntimeError):
        an_order_whose_own_write_fails()
    assert not Execution.objects.exists()

    started = orders.place_order("A-1", 2, 5)
    assert Execution.objects.filter(pk=started.id).exists()
    assert api.get(started.id).status in {"pending", "running", "succeeded"}
    # The input it starts with is one the workflow runs to its end with.
    ended = run("fulfil-order", Execution.objects.get(pk=started.id).input)
    assert ended.status == "succeeded", ended.error
    assert ended.output["charged"] == 10


def test_the_signal_example_receives_every_ending(caplog) -> None:
    from executions.signals import execution_finished

    module = load("project/shop/signals.py")
    try:

        class Ended:
            id = uuid.uuid4()

        with caplog.at_level(logging.INFO, logger=module.__name__):
            execution_finished.send(sender=None, execution=Ended(), status="succeeded")
        assert f"execution {Ended.id} of fulfil-order ended succeeded" in caplog.text
    finally:
        execution_finished.disconnect(module.order_workflow_ended)


@pytest.mark.django_db
def test_the_harness_example_passes(example_functions) -> None:
    example_functions("project/shop/workflow_functions.py")
    workflow_create(name="fulfil-order", definition=definition("fulfil-order"), by="docs")
    test = load("project/shop/tests/test_fulfil_order.py")
    test.test_an_order_is_reserved_then_charged(db=None)  # the database is open already


def test_the_testing_page_s_workflow_is_the_host_project_s_own() -> None:
    """The page shows the host project's test itself (tests/host/suite/, which the host's
    own suite runs: tests/unit/test_host__testing.py), beside this copy of its workflow."""
    kept = ROOT / "tests/host/shop/workflows/order-follow-up.json"
    assert definition("order-follow-up") == json.loads(kept.read_text())


# --- the pages ----------------------------------------------------------------------------


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if GENERATED not in p.parents)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    body: list[str]
    marked: bool


def fenced_blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        _indent, fence, language = opened.groups()
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = [line.strip() for line in lines[i + 1 : end] if line.strip()]
        marked = previous == ILLUSTRATIVE or (
            previous.startswith("<!-- illustrative:") and previous.endswith("-->")
        )
        yield Block(page, i + 1, language.lower(), body, marked)
        i = end + 1


def test_the_pages_exist() -> None:
    assert (DOCS / "index.md").exists()
    assert len(pages()) > 10


def test_every_json_or_python_block_is_an_example_file_or_marked_illustrative() -> None:
    loose = []
    for page in pages():
        for block in fenced_blocks(page):
            if block.language not in CHECKED_LANGUAGES or block.marked:
                continue
            if block.body and all(SNIPPET.match(line) for line in block.body):
                continue
            loose.append(f"{page.relative_to(ROOT)}:{block.line} ```{block.language}")
    assert not loose, (
        "put these in docs/examples/ and include them with --8<--, or mark them "
        f"{ILLUSTRATIVE} on the line before the fence: " + ", ".join(loose)
    )


def test_every_snippet_include_sits_in_a_fenced_block() -> None:
    """An include outside a fence is pasted in as prose: a JSON definition then reads as
    one long paragraph on the page."""
    loose = []
    for page in pages():
        fenced = sum(
            1 for block in fenced_blocks(page) for line in block.body if SNIPPET.match(line)
        )
        lines = page.read_text().splitlines()
        bare = [n for n, line in enumerate(lines, 1) if SNIPPET.match(line)]
        if len(bare) != fenced:
            loose.append(f"{page.relative_to(ROOT)}: lines {bare}, {fenced} inside a fence")
    assert not loose, "wrap each include in a ```json or ```python fence: " + "; ".join(loose)


def test_every_snippet_include_names_a_file_that_exists() -> None:
    missing = []
    for page in DOCS.rglob("*.md"):
        for number, line in enumerate(page.read_text().splitlines(), 1):
            found = SNIPPET.match(line)
            if found and not (ROOT / found.group(1).split(":")[0]).is_file():
                missing.append(f"{page.relative_to(ROOT)}:{number} {found.group(1)}")
    assert not missing, missing


def test_every_example_is_shown_on_a_page() -> None:
    included = {
        found.group(1)
        for page in DOCS.rglob("*.md")
        for line in page.read_text().splitlines()
        if (found := SNIPPET.match(line))
    }
    files = {
        str(path.relative_to(ROOT))
        for path in EXAMPLES.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert not files - included, files - included


# --- what the pages name --------------------------------------------------------------


def page_texts() -> Iterator[tuple[Path, str]]:
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        if GENERATED not in page.parents:
            yield page, page.read_text()


def code_text() -> str:
    """Everything a setting's name can be read from: the apps, the standalone project,
    the benchmarks, ./dev and the test settings."""
    packages = ("workflows", "executions", "nodes", "config", "bench")
    files = [p for package in packages for p in (ROOT / package).rglob("*.py")]
    files += [ROOT / "dev", ROOT / "tests" / "settings.py", ROOT / "docker-compose.yml"]
    return "\n".join(path.read_text() for path in files)


def test_every_setting_a_page_names_exists() -> None:
    from workflows.conf import PREFIX, SETTINGS

    known = code_text() + " ".join(PREFIX + name for name in SETTINGS)
    named = {
        (page, name)
        for page, text in page_texts()
        for name in re.findall(r"\bWORKFLOW_[A-Z0-9_]*[A-Z0-9]\b", text)
    }
    # WORKFLOW_SECRET_<NAME> is a family: its prefix is what the code reads.
    missing = sorted(
        f"{page.relative_to(ROOT)}: {name}"
        for page, name in named
        if name not in known and not name.startswith("WORKFLOW_SECRET_")
    )
    assert not missing, missing
    assert "WORKFLOW_SECRET_" in known


def test_every_command_a_page_runs_exists() -> None:
    from django.core.management import get_commands

    commands = set(get_commands())
    named = {
        (page, name)
        for page, text in page_texts()
        for name in re.findall(r"manage\.py ([a-z_]+)", text)
    }
    missing = sorted(
        f"{page.relative_to(ROOT)}: {name}" for page, name in named if name not in commands
    )
    assert not missing, missing


PATH = re.compile(
    r"`((?:config|workflows|executions|nodes|tests|bench|deploy|scripts|docs)/[\w./-]*)`"
)


def test_every_repository_path_a_page_names_exists() -> None:
    missing = sorted(
        f"{page.relative_to(ROOT)}: {path}"
        for page, text in page_texts()
        for path in PATH.findall(text)
        if "<" not in path
        and not (ROOT / path.rstrip("/")).exists()
        # Generated by ./dev docs, which checks them against the code itself.
        and not path.startswith("docs/reference")
    )
    assert not missing, missing


def test_no_page_cites_a_planning_document_or_an_issue() -> None:
    from tests.unit.test_source_references import references

    found = [
        f"{page.relative_to(ROOT)}:{number}: {line}"
        for page, text in page_texts()
        for number, line in references(text)
    ]
    assert not found, found


#: Pages other parts of the site provide (the generated reference, the flow features, the
#: performance report): named as agreed, they are linked before they land here.
PROVIDED_ELSEWHERE = {
    *(
        f"docs/reference/{name}.md"
        for name in ("dsl", "settings", "commands", "rest-api", "python-api", "events-statuses")
    ),
    "docs/how-to/timeouts-tags-trigger-rules.md",
    "docs/how-to/parking-cancel-signal-with-start.md",
    "docs/how-to/rate-limits-and-schedules.md",
    "docs/contributing/performance.md",
}


def test_every_link_of_the_readme_leads_somewhere() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    local = [link for link in links if "://" not in link]
    assert local, "the README links into the site"
    missing = [
        link for link in local if not (ROOT / link).exists() and link not in PROVIDED_ELSEWHERE
    ]
    assert not missing, missing
