"""The generated pages of docs/reference/: each from the one place in the code that holds
its subject, so that a setting, field, command, endpoint or event added without its
description fails `./dev docs` (and tests/docs/test_reference.py) instead of going
undocumented.

    python -m scripts.docs_reference --write          # (re)write docs/reference/
    python -m scripts.docs_reference --check          # exit 1 naming each stale file
    python -m scripts.docs_reference --output DIR     # write them under DIR instead

It runs the standalone project's settings (config.settings) with none of the
environment's WORKFLOW_ variables, so the pages show the defaults wherever it runs.
"""
