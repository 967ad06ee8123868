"""A test-only app: a table that workflow functions write rows into, keyed by (execution,
node), so tests and the chaos run can count how often a step's writes committed."""
