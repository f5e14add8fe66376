"""The toy lamp (tests/support/toy_domain.py) acting in another world than the simulated one:
its `world()` says EMULATOR (or the world it is built with) and its `executor()` names an
executor of that world, which its runner says it runs (`Runner.runs`). Written only against
the domain contract, so every surface's world mark is tested without any venue's code."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from store import World
from tests.support.toy_domain import LampRunner, LampService, LampV1, ToyDomain, ToySettings
from workers.domains.base import RunnerContext
from workers.domains.execution import Runner

# the executor an emulated lamp's operations are confirmed for (bound into their digest)
EMULATED_EXECUTOR = ("toy-lamp-emulated", "1")


class WorldLampRunner(LampRunner):
    """Runs the toy's own executor and the emulated one."""

    def __init__(
        self,
        service: LampService,
        settings: ToySettings,
        on_dispatched: Callable[[str], None],
        executor: tuple[str, str],
    ) -> None:
        super().__init__(service, settings, on_dispatched)
        self.also_runs = executor

    def runs(self, executor_name: str, executor_revision: str) -> bool:
        return (executor_name, executor_revision) == self.also_runs or super().runs(
            executor_name, executor_revision
        )


class WorldLamp(ToyDomain):
    """A lamp in `world` (default EMULATOR): `simulated` says whether nothing of it leaves
    this machine, as the core derives it from the world."""

    def __init__(
        self,
        service: LampService | None = None,
        world: World = World.EMULATOR,
        executor: tuple[str, str] = EMULATED_EXECUTOR,
    ) -> None:
        super().__init__(service)
        self.acts_in = world
        self.runs_on = executor
        self.simulated = world in (World.SIMULATED, World.EMULATOR)

    def world(self, payload: LampV1, settings: ToySettings) -> World | None:
        return self.acts_in

    def worlds(self, settings: ToySettings) -> Sequence[World]:
        return [self.acts_in]

    def executor(self, payload: LampV1, settings: ToySettings) -> tuple[str, str]:
        return self.runs_on

    async def open_runner(self, settings: ToySettings, context: RunnerContext) -> Runner | None:
        runner = WorldLampRunner(self.service, settings, context.on_dispatched, self.runs_on)
        self.runners.append(runner)
        return runner
