"""What a node kind requires: one declaration that the parser checks and the definition's
JSON Schema states, so that /schema and a 400 can never disagree on it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workflows.dsl.checks import Collector


@dataclass(frozen=True)
class Required:
    """A field a node must have or, given several, exactly one of them (a delay's
    `seconds` or `until`)."""

    fields: tuple[str, ...]
    #: What to give, as the problem for a node without it says.
    what: str

    def check(self, c: Collector, raw: Mapping[str, Any], *, node: str | None, prefix: str) -> bool:
        """Whether `raw` has it; if not, a problem naming the (first) field and the fix."""
        present = sum(field in raw for field in self.fields)
        if present == 1:
            return True
        if len(self.fields) == 1:
            message = f"is required: {self.what}"
        else:
            message = f"give exactly one of {self.what}"
        c.add(message, node=node, field=prefix + self.fields[0])
        return False

    def schema(self) -> dict[str, Any]:
        """The JSON Schema keyword that says it."""
        if len(self.fields) == 1:
            return {"required": list(self.fields)}
        return {"oneOf": [{"required": [field]} for field in self.fields]}


def required_schema(requirements: Iterable[Required]) -> dict[str, Any]:
    """The JSON Schema keywords for all of `requirements` (the node's own `required`
    fields are merged into the list this returns under "required")."""
    single = [r.fields[0] for r in requirements if len(r.fields) == 1]
    choices = [r.schema() for r in requirements if len(r.fields) > 1]
    out: dict[str, Any] = {"required": single} if single else {}
    if len(choices) == 1:
        out.update(choices[0])
    elif choices:
        out["allOf"] = choices
    return out
