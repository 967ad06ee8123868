# shop/workflow_functions.py: imported at start-up, as Celery finds tasks.py.
from nodes import NodeError, workflow_function


@workflow_function("shop.reserve")
def reserve(input, ctx):
    if input["quantity"] <= 0:
        # Retrying cannot fix the input: fail the node now.
        raise NodeError("quantity must be positive", type="BadQuantity", retryable=False)
    # ctx.idempotency_key is "<execution id>:<node id>", the same on every retry: hand it
    # to the stock service, so a retried or duplicated attempt reserves once.
    return {"sku": input["sku"], "reserved": input["quantity"], "key": ctx.idempotency_key}


@workflow_function("shop.charge")
def charge(input, ctx):
    ctx.heartbeat()  # long work: renew the lease (and learn of a cancel) now and then
    return {"charged": input["quantity"] * input["price"]}
