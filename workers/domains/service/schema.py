"""service.call's terms: its payload (schema version 1), the kind, and where a call goes as
the card shows it.

The `Domain` that plugs the kind in (settings, runner, checks, words) is `domain.py`; the
runner and the domain import this module, and it imports neither.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from workers.domains.service.settings import Service
from workers.domains.types import Name, StrictModel

KIND = "service.call"
EXECUTOR_NAME = "service-call"
EXECUTOR_REVISION = "1"


class ServiceCallV1(StrictModel):
    service: Name
    action: Name
    # checked against the action's JSON Schema in admit (floats never get this far)
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


def endpoint_shown(service: Service) -> str:
    """The endpoint as the card shows it, bound into the digest: the call goes exactly there."""
    return service.endpoint
