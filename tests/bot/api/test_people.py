"""Every operation the API answers names the people it mentions, from config `[people]`."""

from __future__ import annotations

from store import Click, Store
from store import view as op_view
from tests.support.api import Client, ClientFactory, auth, make_config, post
from tests.support.factories import order_request

NAMES = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol", "ou_dave": "Dave"}


async def _named_api(client_for: ClientFactory) -> Client:
    client: Client = await client_for(make_config(people=NAMES))
    return client


async def test_each_view_names_its_operators_requester_and_decider_and_no_one_else(
    client_for: ClientFactory, store: Store
) -> None:
    api = await _named_api(client_for)
    status, proposed = await post(api, order_request(source={"requester_open_id": "ou_carol"}))
    assert status == 201
    # ops' operators and the requester; Dave is configured but not in this operation
    assert proposed["people"] == {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}

    op = await store.mark_card_sent(proposed["id"], "om_people")
    await store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob", reason="no"))
    response = await api.get(f"/api/v1/operations/{op.id}", headers=auth())
    view = await response.json()
    assert view["decision"]["by"] == "ou_bob" and view["people"]["ou_bob"] == "Bob"
    assert view["decision"]["entry"] == "lark"

    listed = await (await api.get("/api/v1/operations", headers=auth())).json()
    assert [item["people"] for item in listed["items"]] == [proposed["people"]]

    status, second = await post(api, order_request())
    cancelled = await api.post(f"/api/v1/operations/{second['id']}/cancel", headers=auth())
    assert (await cancelled.json())["people"] == {"ou_alice": "Alice", "ou_bob": "Bob"}


async def test_an_id_without_a_name_is_left_out_and_the_store_keeps_no_names(
    client_for: ClientFactory, store: Store
) -> None:
    api = await _named_api(client_for)
    body = order_request(source={"requester_open_id": "ou_zed"})
    status, view = await post(api, body)
    assert status == 201 and "ou_zed" not in view["people"]
    assert view["source"]["requester_open_id"] == "ou_zed"  # the id itself is still there

    plain: Client = await client_for(make_config())  # no [people]
    response = await plain.get(f"/api/v1/operations/{view['id']}", headers=auth())
    assert (await response.json())["people"] == {}
    op = await store.get(view["id"])
    assert op is not None and "people" not in await op_view(store, op)  # configuration only
