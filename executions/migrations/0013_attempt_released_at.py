from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("executions", "0012_attempt_inbox"),
        ("workflows", "0003_pools"),
    ]

    operations = [
        # NULL on rows from before: the sweeper reads it as scheduled_at.
        migrations.AddField(
            model_name="attempt",
            name="released_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="attempt",
            index=models.Index(
                condition=models.Q(("claimed_at__isnull", False), ("released_at__isnull", False)),
                fields=["execution", "released_at"],
                name="attempt_released_idx",
            ),
        ),
    ]
