"""tests/host/ is a host project: its own suite (suite/) runs in a pytest of its own, on
the host's settings (tests/unit/test_host__testing.py), never in this repository's."""

collect_ignore = ["suite"]
