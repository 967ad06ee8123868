"""The chaos run's settings: the standalone project's, with the test-only ledger app whose
table the exactly-once scenario's steps write (tests/ledger/)."""

from config.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.ledger"]  # noqa: F405
