"""The manager tool as a pydantic-ai toolset, and a capability that brings model and toolset together."""

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
"""Builds the deps of agentool `name` (its `deps_type` second) for one call of a run that gave none."""

_MANAGER_TOOL = Policy(surface='agent', typed_errors=False)


def manager_tool(manager: AgenToolManager, *, deps: DepsProvider | None = None) -> Tool[Any]:
    """The manager as a pydantic-ai `Tool` taking the input schema; a run given no deps gets them
    from `deps`, else from the injector."""
    deps_type = manager.config.deps_type
    provider = None if deps is None or not declares_deps(deps_type) else (lambda: deps(manager.name, deps_type))

    async def agentool_manager(ctx: RunContext[Any], input: BaseModel) -> Any:
        deterministic = isinstance(ctx.model, AgenToolModel)
        if manager.guarded and not deterministic:
            # An LLM missing its operation's own requirements gets a retry listing the failing fields.
            try:
                manager.check_requirements(input)
            except InputValidationError as error:
                raise ModelRetry(str(error)) from None
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


def manager_toolset(manager: AgenToolManager) -> FunctionToolset[Any]:
    return FunctionToolset([manager_tool(manager)], id=f'agentool:{manager.name}')


def build_agent(
    name: str,
    registry: AgenToolRegistry,
    *,
    system_prompt: str | Sequence[str] | None = None,
    deps: DepsProvider | None = None,
    **agent_kwargs: Any,
) -> AgenToolAgent:
    """The `AgenToolAgent` of agentool `name` (output `str`, JSON text, when the agentool is untyped)."""
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
    return model_id.removeprefix(MODEL_ID_PREFIX) if model_id.startswith(MODEL_ID_PREFIX) else None


@dataclass
class AgenToolCapability(AbstractCapability[Any]):
    """Brings agentool `name`'s manager tool into any pydantic-ai `Agent`: it resolves the model id
    `agentool:NAME` (deterministic runs; or pass any LLM) and contributes the manager toolset.
    See the model guide.
    """

    name: str
    registry: AgenToolRegistry | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        # Refused here, not at the agent's first run.
        check_name(self.name)
        check_instance('registry', self.registry, AgenToolRegistry, optional=True)

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
        registry = get_registry() if self.registry is None else self.registry
        return manager_toolset(registry.get_manager(self.name))

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None
