"""Table and column names for the few statements written as SQL, taken from the models,
so that a statement cannot drift from the schema Django migrates.

`sql(template, attempt=Attempt)` fills `{attempt}` with the model's table and
`{attempt.node_id}` with a field's column (`{attempt.execution}`: execution_id); other
keywords fill their placeholders as given (a status from its enum, say). The names are
the code's own, never a caller's: they are written into the statement, not passed as
parameters.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Field, Model


class Names:
    """A model as raw SQL names it: its table, and each field's column as an attribute."""

    def __init__(self, model: type[Model]) -> None:
        self._model = model

    def __str__(self) -> str:
        return self._model._meta.db_table

    def __getattr__(self, field: str) -> str:
        return column(self._model, field)


def column(model: type[Model], name: str) -> str:
    """The column of `model`'s field `name` (a foreign key's: its `_id` column)."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.column:
        raise ValueError(f"{model.__name__}.{name} is no field with a column")
    return field.column


def sql(template: str, **names: type[Model] | Any) -> str:
    """`template` with each model keyword as its Names, the others as given."""
    values = {
        key: Names(value) if isinstance(value, type) and issubclass(value, Model) else value
        for key, value in names.items()
    }
    return template.format(**values)
