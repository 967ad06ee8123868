from datetime import datetime, timedelta

from workflows.testing import run


def test_the_reminder_goes_out_a_day_after_the_review(db):
    sent = []

    def remind(input, ctx):  # stands in for shop.remind: no e-mail leaves the test
        sent.append(input)
        return {"sent": True}

    result = run(
        "order-follow-up",  # shop/workflows/order-follow-up.json
        {"items": [{"price": 5}, {"price": 7}]},
        functions={"shop.remind": remind},
    )
    assert result.status == "running"  # waiting for the review
    assert result.node("total").output == {"total": 12}

    result = result.approve("review")
    assert result.status == "succeeded"
    assert result.output == {"sent": True}
    assert sent == [{"total": 12}]

    # The day passed at once; the log says it went by.
    fired = [e for e in result.node("wait").events if e["type"] == "timer_fired"]
    approved = [e for e in result.node("review").events if e["type"] == "signal_received"]
    waited = datetime.fromisoformat(fired[0]["timestamp"]) - datetime.fromisoformat(
        approved[0]["timestamp"]
    )
    assert waited >= timedelta(days=1)
