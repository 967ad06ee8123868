"""The operator's actions in the admin: a confirmation page (GET), then one call into the
same service the API calls (POST), with the same permissions, a message, and the acting
user recorded as `by`.

A user without the action's permission gets 403 on both the page and the POST; a refusal
by the service (not allowed in this status, no such node) comes back as an error message
on the execution's page. An approval node's approvers are checked by the service itself
(NotAnApprover is a PermissionDenied: 403), as for the API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models.functions import Length
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from executions.console.page import execution_or_404
from executions.definitions import definition_for
from executions.engine.counterfactual import Report
from executions.engine.statuses import EXECUTION_TERMINAL, ExecutionStatus, TaskStatus
from executions.models import Execution, Task
from executions.services import control, parking, whatif
from executions.services.signals import execution_signal, signal_names
from workflows.models import WorkflowVersion
from workflows.rest.permissions import APPROVE, OPERATE


class ChoiceForm(forms.Form):
    """A form whose field `choose` offers choices known only per execution."""

    choose = ""

    def __init__(self, *args: Any, choices: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields[self.choose]
        assert isinstance(field, forms.ChoiceField)
        field.choices = choices


def _data_field(what: str) -> forms.JSONField:
    return forms.JSONField(
        label="Data",
        required=False,
        help_text=f"Optional JSON: the {what} node's output.",
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class NodeChoice(ChoiceForm):
    """An optional node of the execution (retry one node, replay from one node)."""

    choose = "node"
    node = forms.ChoiceField(required=False)


class ParkedChoice(ChoiceForm):
    """A parked node of the execution."""

    choose = "node"
    node = forms.ChoiceField()


class ReplayForm(NodeChoice):
    """Replay from a node, on the recorded version or another one; or only compare (the
    what-if report of POST .../replay with dry_run, nothing started)."""

    version = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    dry_run = forms.BooleanField(
        required=False,
        label="Only compare",
        help_text="Report where this history would part from the chosen version's decisions, "
        "which outputs could be reused and which nodes would run; start nothing.",
    )

    def __init__(self, *args: Any, versions: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["version"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "the recorded version"), *[(v, f"version {v}") for v in versions]]


class SignalForm(ChoiceForm):
    """Approve or reject: which waiting approval node, with a comment and data."""

    choose = "node"
    node = forms.ChoiceField()
    comment = forms.CharField(
        required=False, max_length=10_000, widget=forms.Textarea(attrs={"rows": 3})
    )
    payload = _data_field("approval")


class NamedSignalForm(ChoiceForm):
    choose = "name"
    name = forms.ChoiceField()
    payload = _data_field("signal")


def _pairs(values: list[str]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


@dataclass(frozen=True)
class Action:
    name: str
    label: str
    #: What the confirmation page says pressing it does.
    explains: str
    permission: str
    #: Whether it applies to an execution in this status.
    applies: Callable[[Execution], bool]
    #: Builds the form (None: a bare confirmation) from the execution.
    form: Callable[[Execution, Any, str], forms.Form] | None
    #: Calls the service; returns the message and the execution to show afterwards.
    run: Callable[[Execution, dict[str, Any], str], tuple[str, Execution]]
    danger: bool = False


def _active(execution: Execution) -> bool:
    return (
        execution.status not in EXECUTION_TERMINAL
        and execution.status != ExecutionStatus.CANCELLING
    )


def _retryable(execution: Execution) -> bool:
    return execution.status in (ExecutionStatus.FAILED, ExecutionStatus.CANCELLED)


def node_ids(
    execution: Execution, *, statuses: tuple[str, ...] | None = None, type: str | None = None
) -> list[str]:
    """Nodes of the definition (optionally only those in these statuses or of this type)."""
    definition = definition_for(execution.version_id)
    wanted = [n.id for n in definition.nodes if type is None or n.type == type]
    if statuses is None:
        return wanted
    found = set(
        Task.objects.filter(
            execution=execution, node_id__in=wanted, status__in=statuses
        ).values_list("node_id", flat=True)
    )
    return [n for n in wanted if n in found]


def waiting_approvals(execution: Execution) -> list[str]:
    return node_ids(execution, statuses=(TaskStatus.WAITING,), type="approval")


def parked_nodes(execution: Execution) -> list[str]:
    """Nodes out of attempts under on_exhausted "park", waiting for a retry or a fail."""
    return node_ids(execution, statuses=(TaskStatus.PARKED,))


#: Parked tasks the confirmation page offers at most (a map of 100,000 items may park
#: them all): the definition's nodes and the lowest indices come first, and the task the
#: page was opened for (?node=) is always among them.
PARKED_CHOICES = 200


def parked_tasks(execution: Execution, node: str = "") -> list[str]:
    """The parked tasks an operator may retry or fail: the definition's nodes and each
    map's items (an item is a task of its own, answered on its own), in the definition's
    order, a map's items in index order; at most PARKED_CHOICES, plus `node` if parked."""
    order = {node_id: n for n, node_id in enumerate(node_ids(execution))}
    parked = Task.objects.filter(execution=execution, status=TaskStatus.PARKED)
    # `map[9]` before `map[10]`: by length, then the index's digits compare.
    first = parked.order_by(Length("node_id"), "node_id").values_list("node_id", flat=True)
    found = list(first[:PARKED_CHOICES])
    if node and node not in found and parked.filter(node_id=node).exists():
        found.append(node)

    def place(node_id: str) -> tuple[int, int, str]:
        return order.get(node_id.partition("[")[0], len(order)), len(node_id), node_id

    return sorted(found, key=place)


def any_parked(execution: Execution) -> bool:
    return Task.objects.filter(execution=execution, status=TaskStatus.PARKED).exists()


def _cancel(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
    control.execution_cancel(execution_id=execution.pk, by=by)
    return (
        "Cancel requested: running attempts are told to stop, pending ones never start.",
        execution,
    )


def _retry(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
    node = data.get("node") or None
    control.execution_retry(execution_id=execution.pk, node_id=node, by=by)
    what = f"node {node} and its downstream" if node else "its failed and cancelled nodes"
    return f"Retry requested: {what} run again, in the same history.", execution


def _replay(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
    node, number = data.get("node") or None, data.get("version")
    if data.get("dry_run"):
        version = whatif.version_of(execution, number or execution.version.version)
        report = whatif.replay_report(execution=execution, version=version)
        return _what_if(report, version.version), execution
    replay = control.execution_replay(
        execution_id=execution.pk, from_node=node, version=number, by=by
    )
    origin = f" from node {node}" if node else ""
    on = f" on version {number}" if number else ""
    return f"Replay{origin}{on} started as execution {replay.pk}.", replay


def _what_if(report: Report, number: int) -> str:
    parted = (
        f"parts from the recorded history at seq {report.diverges_at}: {report.reason}"
        if report.diverges_at is not None
        else "decides exactly as recorded"
    )
    reused = ", ".join(report.reused) or "none"
    would_run = ", ".join(report.would_run) or "none"
    return (
        f"What-if against version {number} (nothing started): it {parted}. "
        f"Reusable outputs: {reused}. Would run: {would_run}."
    )


def _pause(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
    control.execution_pause(execution_id=execution.pk, by=by)
    return "Paused: nothing new is scheduled or fired; running attempts finish.", execution


def _resume(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
    control.execution_resume(execution_id=execution.pk, by=by)
    return "Resumed: the execution goes on where it stopped.", execution


def _signal_names(execution: Execution) -> list[str]:
    return sorted(signal_names(definition_for(execution.version_id)))


def _send_signal(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
    execution_signal(execution_id=execution.pk, name=data["name"], data=data.get("payload"), by=by)
    return f"Signal {data['name']} sent.", execution


def _signal(decision: str) -> Callable[[Execution, dict[str, Any], str], tuple[str, Execution]]:
    def run(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
        control.signal_send(
            execution_id=execution.pk,
            node_id=data["node"],
            decision=decision,
            data=data.get("payload"),
            comment=data.get("comment") or "",
            by=by,
        )
        return f"Node {data['node']}: {decision} recorded.", execution

    return run


def _unpark(action: str) -> Callable[[Execution, dict[str, Any], str], tuple[str, Execution]]:
    service = parking.parked_task_retry if action == "retry" else parking.parked_task_fail
    done = {"retry": "another round of attempts starts", "fail": "it fails for good"}[action]

    def run(execution: Execution, data: dict[str, Any], by: str) -> tuple[str, Execution]:
        service(execution_id=execution.pk, node_id=data["node"], by=by)
        return f"Parked node {data['node']}: {done}.", execution

    return run


def _parked_form(execution: Execution, data: Any, node: str) -> forms.Form:
    return ParkedChoice(data, choices=_pairs(parked_tasks(execution, node)), initial={"node": node})


def _retry_form(execution: Execution, data: Any, node: str) -> forms.Form:
    nodes = node_ids(execution, statuses=control.RETRYABLE_NODE)
    choices = [("", "every failed or cancelled node"), *_pairs(nodes)]
    return NodeChoice(data, choices=choices, initial={"node": node})


def _replay_form(execution: Execution, data: Any, node: str) -> forms.Form:
    choices = [("", "the start (run every node)"), *_pairs(node_ids(execution))]
    versions = WorkflowVersion.objects.filter(workflow_id=execution.workflow_id)
    numbers = list(versions.order_by("version").values_list("version", flat=True))
    return ReplayForm(data, choices=choices, versions=numbers, initial={"node": node})


def _signal_form(execution: Execution, data: Any, node: str) -> forms.Form:
    return SignalForm(data, choices=_pairs(waiting_approvals(execution)), initial={"node": node})


def _named_signal_form(execution: Execution, data: Any, node: str) -> forms.Form:
    return NamedSignalForm(data, choices=_pairs(_signal_names(execution)))


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action(
            "cancel",
            "Cancel",
            "Running attempts are told to stop, pending nodes never start, and the execution "
            "ends cancelled.",
            OPERATE,
            _active,
            None,
            _cancel,
            danger=True,
        ),
        Action(
            "retry",
            "Retry",
            "Failed and cancelled nodes (or the one you choose) run again with their "
            "downstream, in the same history.",
            OPERATE,
            _retryable,
            _retry_form,
            _retry,
        ),
        Action(
            "replay",
            "Replay",
            "A new execution of the same input, on the recorded version or another one. From "
            "a node: nodes not downstream of it keep their recorded outputs. On another "
            "version: the outputs the what-if report marks reusable are kept. Only compare: "
            "the report, and nothing started.",
            OPERATE,
            lambda e: True,
            _replay_form,
            _replay,
        ),
        Action(
            "pause",
            "Pause",
            "Nothing new is scheduled or fired while it is paused; running attempts finish "
            "and record their results. Resume goes on where it stopped.",
            OPERATE,
            lambda e: e.status == ExecutionStatus.RUNNING,
            None,
            _pause,
        ),
        Action(
            "resume",
            "Resume",
            "The execution goes on where it stopped: what happened while it was paused is "
            "decided upon, and held attempts and timers are sent again.",
            OPERATE,
            lambda e: e.status == ExecutionStatus.PAUSED,
            None,
            _resume,
        ),
        Action(
            "signal",
            "Send signal",
            "Record a named signal: the signal node waiting for that name (now or later) "
            "succeeds with the data as its output.",
            OPERATE,
            lambda e: e.status not in EXECUTION_TERMINAL and bool(_signal_names(e)),
            _named_signal_form,
            _send_signal,
        ),
        Action(
            "retry_parked",
            "Retry parked node",
            "The parked node (out of attempts) gets another round of attempts, the first at "
            "once; if they run out too it parks again.",
            OPERATE,
            any_parked,
            _parked_form,
            _unpark("retry"),
        ),
        Action(
            "fail_parked",
            "Fail parked node",
            "The parked node fails for good, as it would have without parking: the execution "
            "fails and the compensations of the nodes that succeeded run.",
            OPERATE,
            any_parked,
            _parked_form,
            _unpark("fail"),
            danger=True,
        ),
        Action(
            "approve",
            "Approve",
            "Answer a waiting approval node: it succeeds, with the data you give as its output.",
            APPROVE,
            lambda e: bool(waiting_approvals(e)),
            _signal_form,
            _signal("approve"),
        ),
        Action(
            "reject",
            "Reject",
            "Answer a waiting approval node: it fails, and the execution with it.",
            APPROVE,
            lambda e: bool(waiting_approvals(e)),
            _signal_form,
            _signal("reject"),
            danger=True,
        ),
    )
}


def change_url(execution: Execution) -> str:
    return reverse("admin:executions_execution_change", args=[execution.pk])


def available(execution: Execution, user: Any) -> list[Action]:
    """The actions this user may take on this execution now (the page's buttons)."""
    return [a for a in ACTIONS.values() if user.has_perm(a.permission) and a.applies(execution)]


def action_view(
    model_admin: Any, request: HttpRequest, object_id: str, action: str
) -> HttpResponse:
    spec = ACTIONS.get(action)
    if spec is None:
        raise Http404(f"no action {action!r}")
    execution = execution_or_404(object_id)
    if not model_admin.has_view_permission(request, execution) or not request.user.has_perm(
        spec.permission
    ):
        raise PermissionDenied(f"{spec.label} needs the permission {spec.permission!r}")
    node = request.GET.get("node", "")
    form = (
        spec.form(execution, request.POST if request.method == "POST" else None, node)
        if spec.form
        else None
    )
    if request.method == "POST" and (form is None or form.is_valid()):
        data = form.cleaned_data if form is not None else {}
        try:
            message, shown = spec.run(execution, data, request.user.get_username())
        except (control.NotAllowed, control.UnknownNode) as refused:
            messages.error(request, f"{spec.label} refused: {refused}")
            return HttpResponseRedirect(change_url(execution))
        except ValidationError as refused:
            messages.error(request, f"{spec.label} refused: {'; '.join(refused.messages)}")
            return HttpResponseRedirect(change_url(execution))
        messages.success(request, message)
        return HttpResponseRedirect(change_url(shown))
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": f"{spec.label} execution {execution.pk}?",
        "execution": execution,
        "action": spec,
        "form": form,
        "applies": spec.applies(execution),
        "back": change_url(execution),
    }
    return TemplateResponse(request, "admin/executions/execution/confirm_action.html", context)
