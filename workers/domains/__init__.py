"""Registry of admitted operation domains, keyed by kind."""

from __future__ import annotations

from collections.abc import Mapping

from workers.domains.base import Domain
from workers.domains.finance.schema import FinanceDomain
from workers.domains.message.schema import MessageDomain

DOMAINS: Mapping[str, Domain] = {
    domain.kind: domain for domain in (FinanceDomain(), MessageDomain())
}
