# shop/signals.py: react when an execution ends (import it from your AppConfig.ready()).
import logging

from django.dispatch import receiver

from executions.signals import execution_finished

log = logging.getLogger(__name__)


@receiver(execution_finished)
def order_workflow_ended(sender, execution, status, **kwargs):
    # Sent once per execution, after the commit that ends it; an exception here is logged
    # and never affects the engine.
    log.info("execution %s of %s ended %s", execution.id, "fulfil-order", status)
