"""The manager tool as a pydantic-ai toolset, and a capability that brings model and toolset together.

`AgenToolCapability(name)` is the explicit form of `Agent('agentool:NAME')`: it patches nothing,
resolves the `agentool:NAME` model id and brings the manager toolset, so `deps=` reaches the tools
through `ctx.deps`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from types import NoneType
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_ai import ApprovalRequired, CallDeferred, FunctionToolset, ModelRetry, RunContext, Tool
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model, ModelResolutionContext
from pydantic_ai.toolsets import AbstractToolset

from ..._options import check_instance, check_name
from ...errors import ConfigurationError, InputValidationError
from ..manager import MANAGER_TOOL_NAME, AgenToolManager
from ..model import AgenToolModel
from ..operation import UNSET, Policy, run_operation
from ..output import json_data
from ..registry import AgenToolRegistry, get_registry
from ..request import ToolRaised, declares_deps
from . import AgenToolAgent

__all__ = (
    'AgenToolCapability',
    'DepsProvider',
    'build_agent',
    'manager_tool',
    'manager_toolset',
    'MODEL_ID_PREFIX',
)

MODEL_ID_PREFIX = 'agentool:'

DepsProvider = Callable[[str, Any], AbstractAsyncContextManager[Any]]
"""Builds the deps of agentool `name` (first argument; its `deps_type` second) for one call, when a run gave
none. By default the injector in effect's (`AgenToolInjector.call_deps`)."""

_MANAGER_TOOL = Policy(surface='agent', typed_errors=False)
"""The manager tool in a run: pydantic-ai handles a retry (a deterministic model then raises the typed error)."""


def manager_tool(manager: AgenToolManager, *, deps: DepsProvider | None = None) -> Tool[Any]:
    """The manager as a pydantic-ai `Tool` whose argument schema is exactly the input schema.

    Its only non-context parameter is annotated with the input schema, so pydantic-ai publishes
    that model's JSON schema (fields, descriptions, the operation enum) and validates arguments
    with it before the manager runs. A run that gave no deps (`ctx.deps is None`) of an agentool
    declaring a `deps_type` gets them from `deps`, by default the injector in effect (the instance
    every surface gets), for the call of a tool that takes `ctx`.
    """
    deps_type = manager.config.deps_type
    provider = None if deps is None or not declares_deps(deps_type) else (lambda: deps(manager.name, deps_type))

    async def agentool_manager(ctx: RunContext[Any], input: BaseModel) -> Any:
        deterministic = isinstance(ctx.model, AgenToolModel)
        if manager.guarded and not deterministic:
            _retry_unless_satisfied(manager, input)
        given = UNSET if ctx.deps is None else ctx.deps
        try:
            result = await run_operation(
                _MANAGER_TOOL, manager, input, ctx, deps=given, provider=provider, tracer=ctx.tracer
            )
        except (ValidationError, CallDeferred, ApprovalRequired) as error:
            if not deterministic:
                raise  # an LLM run gets pydantic-ai's retry or deferral, as from any tool
            # A deterministic run has no one to retry or approve: the model raises it unchanged (see `ToolRaised`).
            return ToolRaised(error)
        if deterministic and not isinstance(result, str | int | float | bool | NoneType):
            # The framework serialises the return before the model sees it: a value JSON cannot carry
            # ends the run with the typed error a lean run raises, not pydantic's own.
            json_data(result, manager.name)
        return result

    agentool_manager.__annotations__ = {'ctx': RunContext[Any], 'input': manager.input_schema, 'return': Any}
    description = manager.config.description or f'Run an operation of the {manager.name!r} agentool.'
    return Tool(agentool_manager, takes_ctx=True, name=MANAGER_TOOL_NAME, description=description)


def _retry_unless_satisfied(manager: AgenToolManager, input: BaseModel) -> None:
    """A model that chose `input` (an LLM) is asked to choose again when its operation's own
    requirements are unmet, as for any argument that fails validation: the same list of failing
    fields, as a retry (after `max_retries`, pydantic-ai ends the run). `AgenToolModel` checks them
    before it calls the tool, and ends the run with the typed error instead."""
    try:
        manager.check_requirements(input)
    except InputValidationError as error:
        raise ModelRetry(str(error)) from None


def manager_toolset(manager: AgenToolManager) -> FunctionToolset[Any]:
    """A toolset holding only the manager tool of `manager`'s agentool."""
    return FunctionToolset([manager_tool(manager)], id=f'agentool:{manager.name}')


def build_agent(
    name: str,
    registry: AgenToolRegistry,
    *,
    system_prompt: str | Sequence[str] | None = None,
    deps: DepsProvider | None = None,
    **agent_kwargs: Any,
) -> AgenToolAgent:
    """The `AgenToolAgent` of agentool `name`, registered in `registry`: its model, manager tool,
    output type (`str`, JSON text, when the agentool is untyped), deps type and description.

    `lean=False` among `agent_kwargs` makes every run take the agent graph (see `AgenToolAgent`);
    `deps` builds the deps of a run given none (see `manager_tool`)."""
    config = registry.require(name)
    return AgenToolAgent(
        AgenToolModel(name, registry=registry),
        output_type=str if config.output_type is None else config.output_type,
        deps_type=config.deps_type,
        name=name,
        description=config.description,
        system_prompt=() if system_prompt is None else system_prompt,
        tools=[manager_tool(registry.get_manager(name), deps=deps), *agent_kwargs.pop('tools', ())],
        **agent_kwargs,
    )


def parse_model_id(model_id: str) -> str | None:
    """The agentool name in an `agentool:NAME` model id, or `None` for any other id."""
    if model_id.startswith(MODEL_ID_PREFIX):
        return model_id[len(MODEL_ID_PREFIX) :]
    return None


@dataclass
class AgenToolCapability(AbstractCapability[Any]):
    """Brings agentool `name`'s manager tool into any pydantic-ai `Agent`, without patching anything.

    It resolves the model id `agentool:NAME` (so the model string works with no import-time hook)
    and contributes the manager toolset, so `deps=` reaches the tools through `ctx.deps`. It does
    not impose a model: pass `'agentool:NAME'` (or an `AgenToolModel`) for deterministic runs, or
    any LLM to let it call the manager tool.

    Example:
        ```python {test="skip"}
        agent = Agent('agentool:storage', capabilities=[AgenToolCapability('storage')], deps_type=Store)
        result = await agent.run('{"operation": "read", "key": "k"}', deps=store)
        ```
    """

    name: str
    registry: AgenToolRegistry | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        # Refused here, not as an AttributeError or a not-found error at the agent's first run.
        check_name(self.name)
        check_instance('registry', self.registry, AgenToolRegistry, optional=True)

    def _registry(self) -> AgenToolRegistry:
        return get_registry() if self.registry is None else self.registry

    async def resolve_model_id(self, ctx: ModelResolutionContext[Any], *, model_id: str) -> Model | None:
        name = parse_model_id(model_id)
        if name is None:
            return None
        if name != self.name:
            raise ConfigurationError(
                f'model id {model_id!r} names a different agentool than this capability ({self.name!r})',
                agentool=name,
            )
        return AgenToolModel(name, registry=self.registry)

    def get_toolset(self) -> AbstractToolset[Any]:
        return manager_toolset(self._registry().get_manager(self.name))

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None
