"""The chaos suite: many executions on PostgreSQL + Redis while workers are killed and the
database and the broker restart; then every promise of the engine is checked.

    python -m tests.chaos.run small|full [--executions N]     (or: ./dev chaos small|full)
"""
