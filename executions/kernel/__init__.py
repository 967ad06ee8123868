"""Everything done under an execution's lock: the lock and its protocol (lock.py, read it
first), the unit of work, the log's readers, the inbox, effects, held attempts and
projections. It imports no service and no task (tests/unit/test_layers.py)."""
