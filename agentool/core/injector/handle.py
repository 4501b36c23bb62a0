"""`AgenToolHandle` and `Uses`: how a typed deps class declares the agentools it calls.

A field typed `AgenToolHandle[Output]` in an agentool's `deps_type` is filled by the injector with a
handle on the agentool named like the field (or by `Uses('name')` in `Annotated`). A handle holds a
name, not an agent: every call goes back through the injector, so overrides in effect at call time
(`injector.override(...)`) reach through it.

Example:
    ```python {test="skip"}
    @dataclass
    class SessionDeps:
        storage: AgenToolHandle[StorageOutput]                                  # agentool 'storage'
        crypto: Annotated[AgenToolHandle[CryptoOutput], Uses('crypto_v2')]      # agentool 'crypto_v2'
        db: Database                                                            # a resource, by type


    async def login(ctx: RunContext[SessionDeps], user: str) -> Session:
        record = await ctx.deps.storage({'operation': 'read', 'key': user})  # typed StorageOutput
    ```
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

    `await handle(input)` and `await handle.call(input)` return the typed output on the direct path;
    `await handle.run(input)` runs the full pydantic-ai agent and returns its run result.
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
