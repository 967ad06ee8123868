from django.db import migrations, models
from django.db.models import F


def held_since_created(apps, schema_editor):
    # Executions held before this column: their place in the queue stays where it was.
    Execution = apps.get_model("executions", "Execution")
    Execution.objects.filter(held=True, held_at__isnull=True).update(held_at=F("created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("executions", "0010_pools"),
    ]

    operations = [
        migrations.AddField(
            model_name="execution",
            name="held_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(held_since_created, migrations.RunPython.noop, elidable=True),
        migrations.RemoveIndex(model_name="execution", name="execution_held_idx"),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("held", True), ("status", "pending")),
                fields=["workflow", "concurrency_key", "held_at", "id"],
                name="execution_held_queue_idx",
            ),
        ),
    ]
