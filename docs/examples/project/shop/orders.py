# shop/orders.py: start a workflow from your own code.
from django.db import transaction

from workflows import api


def place_order(sku, quantity, price, user=None):
    with transaction.atomic():
        # Your own writes go here (an Order row, say): the execution exists, and runs,
        # if and only if this block commits. A rollback leaves no execution behind.
        run = api.start("fulfil-order", {"sku": sku, "quantity": quantity, "price": price}, by=user)
    return run


def wait_for(run_id):
    run = api.get(run_id)
    return run.result(timeout=60)  # the output, or api.ExecutionFailed (with .execution)
