"""The host's conftest: the engine's fixtures (workflow_run) for its tests."""

pytest_plugins = ["workflows.testing.fixtures"]
