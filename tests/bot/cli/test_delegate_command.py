"""`countersign delegate grant|list|revoke`, the real process on the test backend: an audience
that allows no delegation refuses the grant naming the field and the fix, and writes
nothing; where it is allowed, a grant is listed, revoked once, and both are audited."""

from __future__ import annotations

from pathlib import Path

from store import DelegationLedger, Store, delegation_subject
from tests.support.backends import Backend
from tests.support.processes import ENV, backend_config, cli, free_port


def allowing(config: Path, days: int) -> Path:
    text = config.read_text().replace(
        'operators = ["ou_alice"]', f'operators = ["ou_alice"]\ndelegation_max_days = {days}'
    )
    config.write_text(text)
    return config


async def test_grant_list_and_revoke_and_a_refusal_that_writes_nothing(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    config = backend_config(backend, tmp_path, free_port())
    grant = ("delegate", "grant", "--audience", "ops", "--from", "ou_alice", "--to", "ou_bob")

    refused = await cli(*grant, "--days", "3", "--config", str(config), env=ENV)
    assert refused.code == 2, refused.out + refused.err
    assert "audience: ops allows no delegation: set delegation_max_days" in refused.err
    too_long = await cli(*grant, "--days", "30", "--config", str(allowing(config, 14)), env=ENV)
    assert too_long.code == 2 and "until: is more than 14 days away" in too_long.err
    assert await DelegationLedger(store).listed(ended=True) == []

    granted = await cli(*grant, "--days", "3", "--config", str(config), env=ENV)
    assert granted.code == 0, granted.err
    assert "ou_bob for ou_alice until" in granted.out and "(in force;" in granted.out
    [delegation] = await DelegationLedger(store).listed()
    listed = await cli("delegate", "list", "--config", str(config), env=ENV)
    assert listed.code == 0 and delegation.id in listed.out

    revoke = ("delegate", "revoke", delegation.id, "--config", str(config))
    done = await cli(*revoke, env=ENV)
    assert done.code == 0 and "(revoked;" in done.out, done.out + done.err
    again = await cli(*revoke, env=ENV)
    assert again.code == 1 and "no delegation" in again.err
    events = [e.event for e in await store.audit(delegation_subject(delegation.id))]
    assert events == ["delegation_granted", "delegation_revoked"]
