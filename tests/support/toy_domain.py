"""A toy domain, "toy.lamp" (switch a lamp), written only against the domain contract.

It proves that a domain plugs in: its schema, settings (`[domains.toy]`), words, outcomes
and runner live here, nowhere else, and a test registers it at run time
(`workers.domains.registered(ToyDomain(service))`) before the config is loaded. Its runner
talks to `LampService`, a small real service in this process that remembers every client id
it was sent, so a lookup finds an earlier switch, and that warms a lamp before it is lit: a
non-final status ("warming") that every waiter must wait through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernel.problems import FieldProblem
from store import Operation, Tone
from workers.domains.base import Domain, Example, Projection, RunnerContext, terms
from workers.domains.execution import Observed, Refusal, Runner
from workers.domains.types import Name, StrictModel
from workers.domains.words import KindWords, Meaning, Said

KIND = "toy.lamp"
TABLE = "toy"
WARMING, LIT, OFF, REFUSED = "warming", "lit", "off", "refused"


class LampV1(StrictModel):
    lamp: Name = Field(description="a lamp named in [domains.toy] lamps")
    state: Literal["on", "off"] = Field(description="switch it on or off")
    brightness: Annotated[int, Field(ge=1, le=100)] | None = Field(
        default=None, description="percent, when switching on"
    )


class ToySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    lamps: list[Name] = Field(default_factory=list, description="lamps proposals may switch")


WORDS = KindWords(
    title=Said("Switch a lamp", "开关灯"),
    waiting=Said("Lamp to switch", "待开关的灯"),
    partly=Said(
        "Lamp to switch — {count} of {required} confirmed",
        "待开关的灯 — 已确认 {count}/{required}",
    ),
    terms={
        "lamp": Said("Lamp", "灯"),
        "state": Said("Switch to", "切换为"),
        "brightness": Said("Brightness (%)", "亮度（%）"),
    },
)

OUTCOMES: Mapping[str, Meaning] = {
    # the lamp took the switch and is warming up: not final, the executor keeps looking
    WARMING: Meaning(Said("Warming up", "正在预热"), Tone.WORKING, final=False),
    LIT: Meaning(Said("Lamp lit", "灯已点亮"), Tone.GOOD, final=True),
    OFF: Meaning(Said("Lamp switched off", "灯已关闭"), Tone.DONE, final=True),
    REFUSED: Meaning(Said("Refused by the lamp — not switched", "灯拒绝 — 未切换"), Tone.BAD, True),
}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "desk-on",
        "Switch the desk lamp on at 60%",
        {"lamp": "desk", "state": "on", "brightness": 60},
    ),
    Example("hall-off", "Switch the hall lamp off", {"lamp": "hall", "state": "off"}),
)


@dataclass
class Switch:
    """One switch the service received, by its client id."""

    lamp: str
    state: str
    brightness: int | None
    status: str
    looks: int = 0


class LampService:
    """The lamps' own service. `submits` lists every switch request as it arrived (a repeat
    of a client id is listed again, and changes nothing); a lamp switched on says "warming"
    until it has been looked at `warm_after_looks` times, and never while `held`."""

    def __init__(
        self, broken: Iterable[str] = (), *, warm_after_looks: int = 2, held: bool = False
    ) -> None:
        self.broken = frozenset(broken)  # lamps that refuse every switch
        self.warm_after_looks = warm_after_looks
        self.held = held
        self.submits: list[str] = []
        self.looked_up: list[str] = []
        self._switches: dict[str, Switch] = {}

    def switch(self, client_id: str, payload: LampV1) -> Switch:
        self.submits.append(client_id)
        if client_id not in self._switches:  # the same client id is the same switch
            status = REFUSED if payload.lamp in self.broken else WARMING
            if status == WARMING and payload.state == "off":
                status = OFF
            self._switches[client_id] = Switch(
                payload.lamp, payload.state, payload.brightness, status
            )
        return self._switches[client_id]

    def look(self, client_id: str) -> Switch | None:
        self.looked_up.append(client_id)
        found = self._switches.get(client_id)
        if found is not None and found.status == WARMING:
            found.looks += 1
            if not self.held and found.looks >= self.warm_after_looks:
                found.status = LIT
        return found

    def release(self) -> None:
        """Held lamps may warm up now (each is lit at its next look)."""
        self.held = False
        for found in self._switches.values():
            found.looks = max(found.looks, self.warm_after_looks - 1)


def observed(found: Switch) -> Observed:
    detail: dict[str, object] = {"lamp": found.lamp, "state": found.state}
    if found.brightness is not None:
        detail["brightness"] = found.brightness
    if found.status == WARMING:  # still working: looked at again, nobody told yet
        return Observed(WARMING, detail, working=True, concludes=False)
    return Observed(found.status, detail)


class LampRunner(Runner):
    kind = KIND
    executor_name = "toy-lamp"
    executor_revision = "1"

    def __init__(
        self, service: LampService, settings: ToySettings, on_dispatched: Callable[[str], None]
    ) -> None:
        self.service = service
        self.settings = settings
        self.enabled = settings.enabled
        self.on_dispatched = on_dispatched

    async def prepare(self, op: Operation) -> Refusal | None:
        lamp = LampV1.model_validate(op.payload).lamp
        if lamp not in self.settings.lamps:
            return Refusal("lamp_not_configured", f"lamp {lamp!r} is no longer configured")
        return None

    async def submit(self, op: Operation, client_id: str) -> Observed:
        found = self.service.switch(client_id, LampV1.model_validate(op.payload))
        self.on_dispatched(client_id)
        return observed(found)

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        found = self.service.look(client_id)
        return None if found is None else observed(found)


class ToyDomain(Domain[LampV1, ToySettings]):
    kind = KIND
    config_table = TABLE
    settings_model = ToySettings
    payload_models: Mapping[int, type[LampV1]] = {1: LampV1}
    executor_name = LampRunner.executor_name
    executor_revision = LampRunner.executor_revision
    simulated = True  # no lamp in the world is switched
    words = WORDS
    outcomes = OUTCOMES
    examples = EXAMPLES

    def __init__(self, service: LampService | None = None) -> None:
        self.service = service or LampService()
        self.runners: list[LampRunner] = []  # every runner a process opened, for tests

    def project(self, payload: LampV1) -> Projection:
        return {
            "title": f"Lamp {payload.lamp} {payload.state}",
            "terms": terms(
                {"lamp": payload.lamp, "state": payload.state, "brightness": payload.brightness}
            ),
            "simulated": self.simulated,
        }

    def target_ref(self, payload: LampV1) -> str:
        return f"lamp:{payload.lamp}"

    async def open_runner(self, settings: ToySettings, context: RunnerContext) -> Runner | None:
        runner = LampRunner(self.service, settings, context.on_dispatched)
        self.runners.append(runner)
        return runner

    def admit(self, payload: LampV1, settings: ToySettings) -> list[FieldProblem]:
        if payload.lamp in settings.lamps:
            return []
        known = ", ".join(settings.lamps) or "none configured"
        return [
            FieldProblem(
                "payload.lamp", f"no lamp {payload.lamp!r}", f"use a configured lamp ({known})"
            )
        ]

    def config_problems(self, settings: ToySettings) -> list[FieldProblem]:
        repeated = sorted({lamp for lamp in settings.lamps if settings.lamps.count(lamp) > 1})
        return [
            FieldProblem("lamps", f"names {lamp!r} more than once", "name each lamp once")
            for lamp in repeated
        ]
