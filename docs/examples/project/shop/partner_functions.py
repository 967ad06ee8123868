# shop/partner_functions.py: a function handed a secret through its input.
from nodes import NodeError, workflow_function


@workflow_function("partner.authorize")
def authorize(input, ctx):
    # input["token"] is the value of WORKFLOW_SECRET_PARTNER_TOKEN. Use it; never return
    # it (the engine masks it in whatever is recorded anyway).
    if not input["token"]:
        raise NodeError("no partner token", type="NoToken", retryable=False)
    return {"account": input["account"], "authorized": True}
