from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One reason a definition is rejected."""

    message: str
    #: The node id the problem is in, or None for definition-level fields.
    node: str | None = None
    #: Dotted path of the field inside the node (or definition), e.g. "retry_policy.max_attempts".
    field: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"node": self.node, "field": self.field, "message": self.message}

    def __str__(self) -> str:
        where = ".".join(p for p in (f"nodes[{self.node}]" if self.node else None, self.field) if p)
        return f"{where}: {self.message}" if where else self.message


class DefinitionError(ValueError):
    """Raised by the parser with every problem it found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))
