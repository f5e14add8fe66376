"""The registry of operation domains, keyed by kind: the one place a kind is listed.

Adding a domain is its package plus one `register` line at the bottom. A team's own package
needs no edit here: installed with an entry point in the `countersign.domains` group (its
value: the Domain class), it is registered in every process that imports the registry, the
worker process included. `register` also adds one at run time (a test's toy domain) before
the config is loaded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import entry_points
from types import MappingProxyType

from store import Tone
from workers.domains.base import Domain, P, S
from workers.domains.checked import Checked, Plugin
from workers.domains.execution import CORE_OUTCOMES
from workers.domains.finance.domain import FinanceDomain
from workers.domains.message.domain import MessageDomain
from workers.domains.service.domain import ServiceDomain
from workers.domains.words import Meaning, Said

ENTRY_POINTS = "countersign.domains"
_registered: dict[str, Plugin] = {}
DOMAINS: Mapping[str, Plugin] = MappingProxyType(_registered)


def register(domain: Domain[P, S]) -> Plugin:
    """Admit `domain`'s kind; a kind or a config table already taken is refused."""
    checked = Checked(domain)
    plugin: Plugin = checked  # its types only ever flow out (covariant)
    for other in _registered.values():
        if plugin.kind == other.kind or plugin.config_table == other.config_table:
            raise ValueError(f"{plugin.kind}: kind or config table taken by {other.kind}")
    # the executor's own statuses read the same for every kind
    if taken := sorted(set(plugin.outcomes) & set(CORE_OUTCOMES)):
        raise ValueError(f"{plugin.kind}: outcomes {taken} are the executor's own; rename them")
    _registered[plugin.kind] = plugin
    return plugin


def unregister(kind: str) -> None:
    _registered.pop(kind, None)


@contextmanager
def registered(domain: Domain[P, S]) -> Iterator[Plugin]:
    """`domain` registered for the block (tests)."""
    plugin = register(domain)
    try:
        yield plugin
    finally:
        unregister(plugin.kind)


def meaning(kind: str, status: str) -> Meaning:
    """What `status` says for an operation of `kind`: the domain's own words, else the
    executor's (unknown, unresolved, refused before dispatch, ...). A status nobody declared
    is a bug of the runner's; it still reads, and is taken as final so nothing waits on it."""
    plugin = DOMAINS.get(kind)
    if plugin is not None and status in plugin.outcomes:
        return plugin.outcomes[status]
    if status in CORE_OUTCOMES:
        return CORE_OUTCOMES[status]
    words = status.replace("_", " ")
    return Meaning(Said(words, words), Tone.WARN, final=True)


def register_installed() -> None:
    """Register every domain installed under the `countersign.domains` entry points."""
    for entry in entry_points(group=ENTRY_POINTS):
        try:
            domain = entry.load()()
        except Exception as error:
            raise ImportError(
                f"domain entry point {entry.name} = {entry.value}: {error}"
            ) from error
        if not isinstance(domain, Domain):
            raise TypeError(f"domain entry point {entry.name} = {entry.value} is no Domain")
        register(domain)


register(FinanceDomain())
register(MessageDomain())
register(ServiceDomain())
register_installed()
