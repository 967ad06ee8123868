"""JMESPath with bounds: compiled under a length limit into a cache bounded by the text it
holds, and evaluated under a work budget.

Expressions are user input evaluated inside the orchestrator (and inside POST
/executions for first nodes), so each evaluation must end fast whatever it says: a pipe
of ten `[@,@,@,@,@,@,@,@,@,@][]` stages would otherwise build 10^10 values. Any failure,
whatever its type (OverflowError from `ceil(`1e999`)`, RecursionError from deep nesting,
a TypeError inside a function), comes out as `ExpressionFailure`. Pure: no Django.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, ClassVar

from jmespath.parser import ParsedResult, Parser
from jmespath.visitor import TreeInterpreter

from workflows.dsl.limits import limits, over

if TYPE_CHECKING:
    from jmespath.visitor import _TreeNode  # the stubs' parse-tree node, a TypedDict


class ExpressionFailure(Exception):
    """Why an expression could not be compiled or evaluated, for TemplateError."""


class _UncachedParser(Parser):
    """jmespath's parser caches 512 parse trees of any size in a class-level dict; our
    own cache below is bounded by the text it holds instead, so bypass that one."""

    _CACHE: ClassVar[dict[str, ParsedResult]] = {}
    _MAX_SIZE = 0  # with an empty cache, parse() returns without storing


class _Cache:
    """Least recently used compiled expressions, at most `limit` characters of their text
    in all (a parse tree is about a hundred times its text)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, ParsedResult] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, expression: str) -> ParsedResult | None:
        with self._lock:
            found = self._items.get(expression)
            if found is not None:
                self._items.move_to_end(expression)
            return found

    def put(self, expression: str, parsed: ParsedResult, limit: int) -> None:
        with self._lock:
            if expression in self._items or len(expression) > limit:
                return
            self._items[expression] = parsed
            self._chars += len(expression)
            while self._chars > limit:
                oldest, _ = self._items.popitem(last=False)
                self._chars -= len(oldest)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    @property
    def chars(self) -> int:
        return self._chars


CACHE = _Cache()


def compile_bounded(expression: str) -> ParsedResult:
    """Parse tree of an expression; ExpressionFailure if too long or invalid."""
    bounds = limits()
    if len(expression) > bounds.max_expression_length:
        raise ExpressionFailure(
            over("max_expression_length", what="the expression", got=len(expression))
        )
    found = CACHE.get(expression)
    if found is not None:
        return found
    try:
        parsed = _UncachedParser().parse(expression)
    except RecursionError:
        raise ExpressionFailure("is nested too deeply to parse") from None
    except Exception as exc:  # the third-party parser on untrusted text
        raise ExpressionFailure(f"not a valid JMESPath expression ({exc})") from None
    CACHE.put(expression, parsed, bounds.expression_cache_chars)
    return parsed


class _OverBudget(Exception):
    def __init__(self, limit: str) -> None:
        super().__init__(limit)
        self.limit = limit


class Budget:
    """Work units left for a group of evaluations (one render shares one budget).

    Inside a step (`step_budget`), a budget starts at no more than what the step has
    left, and hands what it used back to the step when it is `settled`: one decrement
    per unit, not two, and the step can never be overdrawn."""

    def __init__(self, *, parent: Budget | None = None, limit: str = "max_expression_work"):
        self.limit, self.parent = limit, parent
        self.left = getattr(limits(), limit)
        if parent is not None and parent.left < self.left:
            self.left, self.limit = parent.left, parent.limit
        self._settled_at = self.left

    def charge(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise _OverBudget(self.limit)

    def settle(self) -> None:
        if self.parent is not None:
            self.parent.left -= self._settled_at - max(self.left, 0)
            self._settled_at = self.left


class _Step:
    """A step's shared budget, made when the step first evaluates an expression: most
    decide calls evaluate none, and each makes a step."""

    #: A class default, no __init__: making a _Step is then as cheap as a call gets.
    budget: Budget | None = None

    def shared(self) -> Budget:
        if self.budget is None:
            self.budget = Budget(limit="max_step_work")
        return self.budget


_STEP: ContextVar[_Step | None] = ContextVar("step_budget", default=None)


@contextmanager
def step_budget() -> Iterator[None]:
    """Every evaluation inside shares WORKFLOW_MAX_STEP_WORK on top of its own budget: a
    decide call over a thousand first nodes (inside POST /executions) cannot do a
    thousand budgets' worth of work."""
    token = open_step()
    try:
        yield
    finally:
        close_step(token)


def open_step() -> Token[_Step | None]:
    """`step_budget` without a generator, for decide's hot path: pass the token to
    `close_step`, in a finally."""
    return _STEP.set(_Step())


def close_step(token: Token[_Step | None]) -> None:
    _STEP.reset(token)


@contextmanager
def spending() -> Iterator[Budget]:
    """A budget of WORKFLOW_MAX_EXPRESSION_WORK (no more than the step has left), settled
    with the step when the block ends, however it ends."""
    step = _STEP.get()
    budget = Budget(parent=step.shared() if step is not None else None)
    try:
        yield budget
    finally:
        budget.settle()


_OVER_BUDGET_WHAT = {
    "max_expression_work": "evaluating it",
    "max_step_work": "the expressions of this orchestrator step together",
}


#: Node types whose result is built by code we do not see step by step (functions,
#: slices): charged by its size once it exists. Their inputs were charged already, and
#: none builds more than a small multiple of its inputs.
_CHARGED_AFTER = frozenset({"function_expression", "slice"})


class _BoundedInterpreter(TreeInterpreter):
    """TreeInterpreter that charges one unit per node visited plus the size of every
    list, object or string it builds, and stops past the budget."""

    def __init__(self, budget: Budget) -> None:
        super().__init__()
        self.budget = budget
        self.charge = budget.charge
        self._methods: dict[str, Any] = {}

    def visit(self, node: _TreeNode, *args: Any, **kwargs: Any) -> Any:
        # The hot path of every evaluation: the charge and the dispatch are inlined.
        budget = self.budget
        budget.left -= 1
        if budget.left < 0:
            raise _OverBudget(budget.limit)
        kind = node["type"]
        method = self._methods.get(kind)
        if method is None:
            method = self._methods[kind] = getattr(self, f"visit_{kind}", self.default_visit)
        result = method(node, *args, **kwargs)
        if kind in _CHARGED_AFTER and isinstance(result, list | dict | str):
            self.charge(len(result))
        return result

    def visit_flatten(self, node: _TreeNode, value: Any) -> Any:
        # Charged before each extend: one step can multiply the size by the number of
        # references to the same list (`[@,@,@][]`), so charging afterwards is too late.
        base = self.visit(node["children"][0], value)
        if not isinstance(base, list):
            return None
        merged: list[Any] = []
        for element in base:
            if isinstance(element, list):
                self.charge(len(element))
                merged.extend(element)
            else:
                self.charge(1)
                merged.append(element)
        return merged


def evaluate_bounded(expression: str, context: Any, budget: Budget | None = None) -> Any:
    """The expression's value over `context`, or ExpressionFailure. `budget`: shared with
    other evaluations (a whole render); None: a budget of its own."""
    if budget is None:
        with spending() as own:
            return evaluate_bounded(expression, context, own)
    parsed = compile_bounded(expression)
    try:
        return _BoundedInterpreter(budget).visit(parsed.parsed, context)
    except _OverBudget as exc:
        what = _OVER_BUDGET_WHAT[exc.limit]
        raise ExpressionFailure(over(exc.limit, what=what) + ": too many values built") from None
    except RecursionError:
        raise ExpressionFailure("could not be evaluated (nested too deeply)") from None
    except Exception as exc:  # JMESPathError, OverflowError, TypeError...: all the same here
        raise ExpressionFailure(
            f"could not be evaluated ({type(exc).__name__}: {exc})"[:500]
        ) from None
