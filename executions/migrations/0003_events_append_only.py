"""On PostgreSQL the database itself refuses UPDATE and DELETE on the event log.

The ORM guards (EventQuerySet, Event.save/delete) stop mistakes in this code base; the
trigger stops everything else that can reach the table (raw SQL, another client). TRUNCATE
is left alone: it is what a test database flush uses, and no application path issues it.
SQLite keeps the ORM guard only.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION executions_event_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'executions_event is append-only: %% refused (seq %%)', TG_OP, OLD.seq
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS executions_event_append_only ON executions_event;
CREATE TRIGGER executions_event_append_only
    BEFORE UPDATE OR DELETE ON executions_event
    FOR EACH ROW EXECUTE FUNCTION executions_event_append_only();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS executions_event_append_only ON executions_event;
DROP FUNCTION IF EXISTS executions_event_append_only();
"""


def forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("executions", "0002_trust_fields")]

    operations = [migrations.RunPython(forward, backward)]
