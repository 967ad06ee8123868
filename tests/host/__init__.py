"""A project the engine joins, as a Django team has one: settings of its own with none of
the engine's, its own DRF defaults, and an app of its own (shop) with workflow functions and
a DRF view."""
