# shop/tests/test_fulfil_order.py: the workflow through the real engine, in your test DB.
from workflows.testing import run


def test_an_order_is_reserved_then_charged(db):
    charged = []

    def charge(input, ctx):  # stands in for shop.charge: no card is charged
        charged.append(input["quantity"] * input["price"])
        return {"charged": charged[-1]}

    result = run(
        "fulfil-order",  # shop/workflows/fulfil-order.json
        {"sku": "A-1", "quantity": 2, "price": 5},
        functions={"shop.charge": charge},
    )
    assert result.status == "succeeded"
    assert result.node("reserve").output["reserved"] == 2
    assert charged == [10]
