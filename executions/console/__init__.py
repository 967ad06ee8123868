"""The operations console in the admin: an execution's picture, timeline, node table and
log, and the operator's actions.

`layout`, `timeline` and `pretty` are pure (no Django): geometry and markup computed from
plain data, unit-tested on their own. `page` reads what they need from the database,
`actions` turns the admin's confirmation pages into calls of the same services the API
calls.
"""
