"""Raw SQL takes its table and column names from the models (executions/sqlnames.py)."""

from __future__ import annotations

import pytest

from executions.models import Attempt, Execution, Task
from executions.sqlnames import column, sql


def test_a_model_gives_its_table_and_columns() -> None:
    assert sql("{a}", a=Attempt) == Attempt._meta.db_table
    # A foreign key's column is its _id column; a plain field's is its name.
    assert sql("{a.execution} {a.node_id}", a=Attempt) == "execution_id node_id"
    assert sql("{t.status} = '{done}'", t=Task, done="succeeded") == "status = 'succeeded'"


def test_a_relation_with_no_column_is_refused() -> None:
    # `replays`: the executions replaying this one, a reverse relation (no column here).
    with pytest.raises(ValueError, match="no field with a column"):
        column(Execution, "replays")
