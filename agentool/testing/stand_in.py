"""Putting a double in place of an agent that the code under test reaches by name, through the injector.

Unlike `agent.override(model=double)`, `use_doubles(name=double)` reaches every run by name.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

from pydantic_ai.agent import AbstractAgent, AgentRun, WrapperAgent
from pydantic_ai.messages import UserContent

from .._options import check_instance, refuse
from ..core.injector import AgenToolInjector, get_injector
from ..core.injector._targets import stood_in_for
from ..core.registry import AgenToolRegistry
from ..errors import InvalidInputError
from .double import AgentDouble, prompt_text

__all__ = ('DoubledAgent', 'use_doubles')


class DoubledAgent(WrapperAgent[Any, Any]):
    """`wrapped` with `double` as its model for every run, however the run is started.

    Its `model` is the double, so the injector never takes the direct path. An agentool's prompt is
    first validated by its manager (in `registry`, by default the one in effect): its typed error.
    """

    def __init__(
        self, wrapped: AbstractAgent[Any, Any], double: AgentDouble, *, registry: AgenToolRegistry | None = None
    ) -> None:
        if isinstance(wrapped, DoubledAgent):
            wrapped = wrapped.wrapped  # the inner double would win over this one
        super().__init__(wrapped)
        self.double = double
        check_instance('registry', registry, AgenToolRegistry, optional=True)
        self._manager = stood_in_for(self, registry=registry)

    @property
    def model(self) -> AgentDouble:
        return self.double

    @asynccontextmanager
    async def iter(
        self, user_prompt: str | Sequence[UserContent] | None = None, **kwargs: Any
    ) -> AsyncGenerator[AgentRun[Any, Any]]:
        # `run`, `run_sync`, `run_stream` and `run_stream_events` all start their runs here.
        if self._manager is not None and user_prompt is not None:
            self._manager.validate_json(_text(user_prompt, self._manager.name))
        with self.wrapped.override(model=self.double):
            async with self.wrapped.iter(user_prompt, **kwargs) as run:
                yield run


@contextmanager
def use_doubles(injector: AgenToolInjector | None = None, /, **doubles: AgentDouble) -> Generator[AgenToolInjector]:
    """Inside the block, the agents registered under these names answer with these doubles.

    An `injector.override(...)` of the injector in effect (by default): task-local, undone on exit.
    """
    check_instance('injector', injector, AgenToolInjector, optional=True)
    for name, double in doubles.items():
        if not isinstance(cast(object, double), AgentDouble):
            what = f'use_doubles({name}=...)'
            raise refuse(name, 'an AgentDouble (scripted with Script(...))', double, name, what=what)
    injector = get_injector() if injector is None else injector
    replacements = {
        name: DoubledAgent(injector.get(name), double, registry=injector.registry) for name, double in doubles.items()
    }
    with injector.override(**replacements) as active:
        yield active


def _text(prompt: str | Sequence[UserContent], agentool: str) -> str:
    """The prompt an agentool reads: text as is, text parts joined; other content it refuses."""
    if isinstance(prompt, str) or all(isinstance(part, str) for part in prompt):
        return prompt_text(prompt)
    raise InvalidInputError(
        f'agentool {agentool!r} takes a JSON text prompt; the prompt contains non-text content', agentool=agentool
    )
