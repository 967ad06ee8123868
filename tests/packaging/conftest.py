from __future__ import annotations

from pathlib import Path

import pytest

from tests.packaging.context import build_context, build_wheel


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/packaging/" in str(item.fspath):
            item.add_marker(pytest.mark.packaging)


@pytest.fixture(scope="session")
def context(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the Docker build context."""
    return build_context(tmp_path_factory.mktemp("context"))


@pytest.fixture(scope="session")
def wheel(context: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from the Docker build context."""
    return build_wheel(context, tmp_path_factory.mktemp("dist"))
