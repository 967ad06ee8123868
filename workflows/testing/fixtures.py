"""pytest fixtures for a project's own suite (pytest-django). In its conftest.py:

pytest_plugins = ["workflows.testing.fixtures"]

def test_checkout(workflow_run):
    assert workflow_run("checkout", {"cart": 7}).status == "succeeded"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def workflow_run(db: None) -> Callable[..., Any]:
    """workflows.testing.run, with the test database open (pytest-django's `db`)."""
    # Imported when a test asks for it, not when pytest loads this plugin: the engine's
    # models need Django set up, which pytest-django does after loading plugins.
    from workflows.testing import run

    return run
