"""What an injector runs for a name (a registered agent, or an override: another agent, a stub),
with everything the direct path needs worked out once, so a call does no introspection."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import NoneType
from typing import Any

from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.agent import AbstractAgent, WrapperAgent
from pydantic_ai.models import Model

from ...errors import DependencyError
from ..agent.capability import AgenToolCapability, build_agent, parse_model_id
from ..definition import extract_tool_metadata
from ..manager import MANAGER_TOOL_NAME, AgenToolManager
from ..model import AgenToolModel
from ..output import output_types
from ..registry import AgenToolConfig, AgenToolRegistry, Route, RoutingConfig, get_registry
from ..request import context_template, declares_deps


def _no_schema(data: str | bytes) -> BaseModel:
    raise TypeError('not an agentool: there is no input schema to validate against')


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    """One runnable thing behind a name, with what the direct path needs precomputed."""

    name: str
    agent: AbstractAgent[Any, Any]
    manager: AgenToolManager | None = None
    """The agentool's manager; `None` when the agent is not an agentool."""
    call_manager: AgenToolManager | None = None
    """The manager `call` routes through; `None` when only a run gives the output."""
    typed_output: bool = True
    """`False` for an agent whose output is JSON text, which `call` then returns too."""
    ctx_template: RunContext[Any] | None = None
    """The context every direct call copies, when a routed tool takes one (`context_template`)."""
    deps_type: Any = NoneType
    needs_deps: bool = False
    needs_run_scope: bool = False
    max_input_bytes: int = 0
    max_input_chars: int = 0
    """A str this long or shorter is within `max_input_bytes` whatever it holds (at most 4 UTF-8 bytes a character)."""
    chain: tuple[str, ...] = ()
    validate_json: Callable[[str | bytes], BaseModel] = _no_schema


def _agentool_of(agent: AbstractAgent[Any, Any]) -> tuple[str, AgenToolRegistry | None] | None:
    model = agent.model
    if isinstance(model, AgenToolModel):
        return model.model_name, model.registry
    if isinstance(model, str) and (name := parse_model_id(model)) is not None:
        # The explicit form, `Agent('agentool:NAME', capabilities=[AgenToolCapability(NAME)])`, may bind a registry.
        bound = (c.registry for c in agent.root_capability.capabilities if isinstance(c, AgenToolCapability))
        return name, next(bound, None)
    return None


def stood_in_for(agent: AbstractAgent[Any, Any], *, registry: AgenToolRegistry | None = None) -> AgenToolManager | None:
    """The manager of the agentool `agent` wraps with a model of its own (a test double), else `None`."""
    while isinstance(agent, WrapperAgent):
        agent = agent.wrapped
        if (found := _agentool_of(agent)) is not None:
            return _manager(*found, registry)
    return None


def _run_only(name: str, agent: AbstractAgent[Any, Any], manager: AgenToolManager | None) -> Target:
    needs_deps = declares_deps(agent.deps_type)
    return Target(
        name=name,
        agent=agent,
        manager=manager,
        deps_type=agent.deps_type,
        needs_deps=needs_deps,
        needs_run_scope=needs_deps,
    )


def _manager(
    agentool: str, bound: AgenToolRegistry | None, registry: AgenToolRegistry | None
) -> AgenToolManager | None:
    source = bound or registry or get_registry()
    # A configuration that cannot run by itself (no tools): the agent was assembled by hand, as the
    # guide shows, and its own manager tool routes. It runs as a plain agent.
    return None if source.validate_config(agentool, include_warnings=False) else source.get_manager(agentool)


def agent_target(name: str, agent: AbstractAgent[Any, Any], *, registry: AgenToolRegistry | None = None) -> Target:
    """The target for `agent` registered (or swapped in) under `name`; an agent standing in for an
    agentool (`stood_in_for`) keeps its manager, so `run` validates its input, but has no direct path."""
    found = _agentool_of(agent)
    if found is None:
        return _run_only(name, agent, stood_in_for(agent, registry=registry))
    if (manager := _manager(*found, registry)) is None:
        return _run_only(name, agent, None)
    agentool, bound = found
    model = agent.model if isinstance(agent.model, Model) else AgenToolModel(agentool, registry=bound or registry)
    needs_deps = declares_deps(agent.deps_type)
    agent_of_run = agent if isinstance(agent, Agent) else None
    template = (
        context_template(model=model, agent=agent_of_run, tool_name=MANAGER_TOOL_NAME)
        if manager.ctx_operations
        else None
    )
    return Target(
        name=name,
        agent=agent,
        manager=manager,
        call_manager=manager if output_types(agent.output_type) is not None else None,
        typed_output=agent.output_type is not str,
        ctx_template=template,
        deps_type=agent.deps_type,
        needs_deps=needs_deps,
        needs_run_scope=needs_deps or bool(manager.config.dependencies),
        max_input_bytes=manager.config.max_input_bytes,
        max_input_chars=manager.config.max_input_bytes // 4,
        chain=(name,),
        validate_json=manager.parse_json,
    )


def stub_target(name: str, replaced: Target, stub: Any) -> Target:
    """A target answering for agentool `name` with `stub` (a function of the validated input, or a
    value), built with the replaced one's schema, operations, limits and output type."""
    manager = replaced.manager
    if manager is None:
        raise DependencyError(
            f'{name!r} is not an agentool: only an agent can replace it, not a stub function or value',
            agentool=name,
        )
    config = manager.config
    # A callable is a function of the input (wrap a callable value as `lambda _: value`).
    produce: Callable[[Any], Any] = stub if callable(stub) else (lambda _input: stub)

    async def agentool_stub(input: BaseModel) -> Any:
        result = produce(input)
        return await result if inspect.isawaitable(result) else result

    routes = {op: Route(tool='agentool_stub', transform=lambda input: {'input': input}) for op in manager.operations}
    # The stub lives in a private registry and no injector: it never shows in the overridden one.
    private = AgenToolRegistry()
    private.register(
        name,
        AgenToolConfig(
            input_schema=config.input_schema,
            routing_config=RoutingConfig(operation_field=config.routing_config.operation_field, operation_map=routes),
            tools=(agentool_stub,),
            output_type=config.output_type,
            description=config.description,
            tools_metadata=[extract_tool_metadata(agentool_stub)],
            max_input_bytes=config.max_input_bytes,
        ),
    )
    return agent_target(name, build_agent(name, private), registry=private)
