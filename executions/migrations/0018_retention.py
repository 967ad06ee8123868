"""Tombstones of purged executions, and the event log's guard letting the purge through.

On PostgreSQL the trigger of 0003 refuses every UPDATE and DELETE on events. It now lets a
DELETE through when the transaction has set `executions.purge` to 'on' (set_config(...,
true), transaction-local: only executions/services/purge_batch.py sets it) and the event's
execution has ended; UPDATE is refused always, and so is a DELETE anywhere else.
"""

import django.db.models.deletion
from django.db import migrations, models

FORWARD = """
CREATE OR REPLACE FUNCTION executions_event_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND current_setting('executions.purge', true) = 'on'
       AND EXISTS (
           SELECT 1 FROM executions_execution
           WHERE id = OLD.execution_id AND status IN ('succeeded', 'failed', 'cancelled')
       ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'executions_event is append-only: %% refused (seq %%)', TG_OP, OLD.seq
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""

# 0003's function, as it was.
BACKWARD = """
CREATE OR REPLACE FUNCTION executions_event_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'executions_event is append-only: %% refused (seq %%)', TG_OP, OLD.seq
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""


def forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("executions", "0017_retry_request"),
        ("workflows", "0003_pools"),
    ]

    operations = [
        migrations.CreateModel(
            name="Tombstone",
            fields=[
                ("id", models.UUIDField(editable=False, primary_key=True, serialize=False)),
                ("status", models.CharField(max_length=16)),
                ("ended_at", models.DateTimeField(blank=True, null=True)),
                ("purged_at", models.DateTimeField()),
                ("events", models.PositiveIntegerField()),
                ("last_hash", models.CharField(blank=True, default="", max_length=64)),
                (
                    "version",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="workflows.workflowversion",
                    ),
                ),
                (
                    "workflow",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="workflows.workflowdefinition",
                    ),
                ),
            ],
            options={
                "ordering": ["-purged_at", "id"],
                "indexes": [models.Index(fields=["-purged_at", "id"], name="tombstone_purged_idx")],
            },
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(
                    ("parent_execution__isnull", True),
                    ("status__in", ["cancelled", "failed", "succeeded"]),
                ),
                fields=["ended_at", "id"],
                name="execution_ended_root_idx",
            ),
        ),
        migrations.RunPython(forward, backward),
    ]
