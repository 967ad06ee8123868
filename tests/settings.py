"""The test run's settings: the project's own, with a SECRET_KEY of the run's.

config/settings.py refuses the built-in key when DEBUG is off, as CI runs. Set here, in
the environment, so that the worker and beat processes the integration tests start (they
inherit it) sign with the same key.
"""

import os
import secrets

os.environ.setdefault("SECRET_KEY", f"tests-only-{secrets.token_urlsafe(40)}")

from config.settings import *  # noqa: F403

# The tests' own workflow functions, registered in the test process and in the workers the
# integration tests start (they run with these settings too), on top of what the
# environment lists.
WORKFLOW_FUNCTION_MODULES = [
    *globals().get("WORKFLOW_FUNCTION_MODULES", []),
    "tests.fault_functions",
    "tests.stuck_functions",
]

# The tests' own app: a table the ledger functions write rows into (tests/ledger/).
INSTALLED_APPS = [*INSTALLED_APPS, "tests.ledger"]  # noqa: F405
