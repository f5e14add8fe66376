"""The outcome's patch meets a card Lark holds locked (someone is clicking it: 230099 "card
action is lock"): the bot retries with backoff, the card still ends on the outcome, and its
delivery is not failed. The sandbox holds the lock through its control API, so the patch is
refused whatever the timing; the test waits on the sandbox's own records, never on sleeps."""

from __future__ import annotations

from store import CardLedger
from tests.support.factories import order_request
from tests.support.stack import Stack, card_says
from tests.support.waiting import eventually


async def test_an_outcome_patch_refused_by_the_card_lock_lands_once_it_is_gone(
    stack: Stack,
) -> None:
    view, message_id = await stack.offered(order_request("locked-card"))
    status, hold = await stack.control("POST", f"/messages/{message_id}/lock", {"hold": True})
    assert status == 200 and hold["locked"] is True

    reply = await stack.click(message_id, "ou_alice")  # the answer itself is not a patch
    assert reply["toast"]["type"] == "success", reply

    def refused_as_locked() -> bool:
        refusals = stack.state.patch_refusals.get(message_id, ())
        return any(r["code"] == 230099 and "card action is lock" in r["msg"] for r in refusals)

    await eventually(refused_as_locked, deadline_s=20, woken_by=stack.state)
    assert "Filled" not in stack.state.messages[message_id].content

    async def failed_for_now() -> bool:  # the bot's card worker saw it and will try again
        history = await CardLedger(stack.store).history(view["id"])
        return any(not entry.ok and entry.code == 230099 for entry in history)

    await eventually(failed_for_now, deadline_s=20)
    await stack.control("POST", f"/messages/{message_id}/lock", {"hold": False})

    await card_says(
        stack, message_id, "Filled · SIMULATED", "Filled 0.010 at 60,000", deadline_s=30
    )

    async def delivered() -> bool:
        _, current = await stack.api("GET", f"/api/v1/operations/{view['id']}")
        return bool(current["card"]["delivery"] == "current")

    await eventually(delivered, deadline_s=20)
    _, current = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert current["card"]["delivery"] != "failed" and not current["card"].get("error")
    history = await CardLedger(stack.store).history(view["id"])
    assert history[-1].ok and history[-1].action == "patch"
