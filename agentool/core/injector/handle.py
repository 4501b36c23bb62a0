"""`AgenToolHandle` and `Uses`: how a typed deps class declares the agentools it calls.

A handle holds a name, not an agent: every call goes back through the injector, so overrides in
effect at call time reach through it. See the injector guide ("Dependencies").
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema
from typing_extensions import TypeVar

from ..._options import check_name

if TYPE_CHECKING:
    from pydantic_ai import AgentRunResult

    from ._injector import AgenToolInjector

__all__ = ('AgenToolHandle', 'Uses')

OutputT = TypeVar('OutputT', default=Any)


@dataclass(frozen=True)
class Uses:
    """Names the agentool an `AgenToolHandle` field refers to, when it differs from the field's name."""

    name: str

    def __post_init__(self) -> None:
        check_name(self.name)


@dataclass(slots=True, repr=False, unsafe_hash=True)
class AgenToolHandle(Generic[OutputT]):
    """A typed handle on agentool `name`, run through `injector` so overrides and run scopes apply.

    `await handle(input)` (or `handle.call`) returns the typed output; `handle.run` the agent's run result.
    """

    name: str
    injector: AgenToolInjector

    # A plain method handing back the injector's coroutine: a delegating hop costs no coroutine of its own.
    def call(self, input: Any) -> Coroutine[Any, Any, OutputT]:
        """The typed output of the agentool for `input`, without the agent graph (see `AgenToolInjector.call`)."""
        return self.injector.call(self.name, input)

    __call__ = call

    async def run(self, input: Any, **run_kwargs: Any) -> AgentRunResult[OutputT]:
        """Run the agentool's agent on `input` (see `AgenToolInjector.run`)."""
        return await self.injector.run(self.name, input, **run_kwargs)

    def __repr__(self) -> str:
        return f'AgenToolHandle({self.name!r})'

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # Lets pydantic models and dataclasses declare handle fields without `arbitrary_types_allowed`.
        return core_schema.is_instance_schema(cls)
