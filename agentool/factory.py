"""`create_agentool`: define, check, register and return an agentool as a pydantic-ai `Agent`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import cache
from types import NoneType
from typing import Any

from pydantic_ai import Agent

from ._options import (
    check_examples,
    check_flag,
    check_labels,
    check_limit,
    check_name,
    check_string_or_strings,
    check_strings,
    check_type_form,
)
from .core.agent import AgenToolAgent
from .core.agent.capability import build_agent
from .core.definition import check_routing, check_tools, configuration_error, extract_tool_metadata, infer_output_type
from .core.injector import get_injector
from .core.registry import DEFAULT_MAX_INPUT_BYTES, AgenToolConfig, AgenToolRegistry, RoutingConfig, get_registry
from .errors import AgenToolError, ConfigurationError

__all__ = ('create_agentool', 'extract_tool_metadata', 'infer_output_type')


def create_agentool(
    name: str,
    input_schema: type[Any],
    routing_config: RoutingConfig,
    tools: Sequence[Callable[..., Any]],
    *,
    system_prompt: str | Sequence[str] | None = None,
    description: str | None = None,
    deps_type: Any = NoneType,
    output_type: Any = None,
    version: str = '1.0.0',
    tags: Sequence[str] | None = None,
    dependencies: Sequence[str] | None = None,
    examples: Sequence[dict[str, Any]] | None = None,
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
    replace: bool = False,
    **agent_kwargs: Any,
) -> AgenToolAgent:
    """Create agentool `name`, register it in the registry and injector in effect and return its `Agent`.

    Its plain runs skip pydantic-ai's agent graph (`lean=False` forces the graph). Creation is
    atomic: every problem of the configuration raises one `ConfigurationError`. The output type is
    `output_type`, else the one inferred from the routed tools' return annotations, else `str`
    (JSON text, `'null'` when every routed tool returns `None`).

    Args:
        input_schema: Pydantic model of the JSON input (usually a `BaseOperationInput`).
        tools: The tool functions, sync or async, optionally taking `ctx: RunContext` first.
        system_prompt: Passed to the agent (agentool ignores it when routing).
        deps_type: Type of `ctx.deps` for the tools; a run given no deps gets them built by the
            injector (`MissingDepsError` when it cannot, unless the type admits `None`).
        dependencies: Names of agentools this one calls.
        max_input_bytes: Prompts larger than this are refused before parsing.
        **agent_kwargs: Passed to `pydantic_ai.Agent`.
    """
    check_name(name)
    routing_config = check_routing(routing_config, agentool=name)
    tools = check_tools(tools, agentool=name)
    check_limit('max_input_bytes', max_input_bytes, agentool=name)
    check_flag('replace', replace)
    check_type_form('deps_type', deps_type, agentool=name)
    check_flag('lean', agent_kwargs.get('lean', True))
    if system_prompt is not None:
        check_string_or_strings('system_prompt', system_prompt)  # else pydantic-ai's error blames the output type
    if unknown := sorted(set(agent_kwargs) - _agent_options()):
        raise ConfigurationError(
            f'agentool {name!r}: unknown option {", ".join(map(repr, unknown))} (not a create_agentool or '
            'pydantic_ai.Agent parameter)',
            agentool=name,
            options=unknown,
        )
    tools_metadata = [extract_tool_metadata(tool) for tool in tools]
    routed = {route.tool for route in routing_config.operation_map.values()}
    explicit_output = output_type is not None  # a failure to build the agent may then be its fault
    if output_type is None:
        output_type = infer_output_type([meta for meta in tools_metadata if meta.name in routed])
        if output_type is NoneType:  # tools returning only `None`: pydantic-ai needs an output, so JSON text ('null')
            output_type = None
    config = AgenToolConfig(
        input_schema=input_schema,
        routing_config=routing_config,
        tools=tools,
        output_type=output_type,
        deps_type=deps_type,
        description=description,
        version=version,
        tags=check_strings('tags', () if tags is None else tags),  # 'abc' is refused, not three tags
        tools_metadata=tools_metadata,
        dependencies=check_labels('dependencies', () if dependencies is None else dependencies, agentool=name),
        examples=check_examples(() if examples is None else examples),
        max_input_bytes=max_input_bytes,
    )
    registry = get_registry()
    if problems := registry.validate_config(config, include_warnings=False):  # the gate: the registry stores anything
        raise configuration_error(name, problems)
    injector = get_injector()
    injector.check_dependencies(name, config)  # a cycle or a non-agentool dependency fails before registering
    previous = registry.get(name)
    registry.register(name, config, replace=replace)
    try:
        agent = _agent(name, registry, system_prompt, agent_kwargs, explicit_output=explicit_output)
        injector.register(name, agent, replace=True)  # the registry already ruled on the name
    except BaseException:  # atomic: a failed creation leaves the registry as it was, timestamps kept
        registry.unregister(name)
        if previous is not None:
            registry.register(name, previous)
        raise
    return agent


@cache
def _agent_options() -> frozenset[str]:
    return frozenset(inspect.signature(Agent.__init__).parameters) - {'self', 'model'} | {'lean'}


def _agent(
    name: str,
    registry: AgenToolRegistry,
    system_prompt: str | Sequence[str] | None,
    agent_kwargs: dict[str, Any],
    *,
    explicit_output: bool,
) -> AgenToolAgent:
    try:
        return build_agent(name, registry, system_prompt=system_prompt, **agent_kwargs)
    except AgenToolError:
        raise
    except Exception as error:  # pydantic-ai refused the output type or an agent option (schema errors too)
        output_type = registry.require(name).output_type
        given = {'output_type': output_type} if explicit_output else {}
        given.update(agent_kwargs)
        shown = ', '.join(f'{key}={value!r}' for key, value in given.items())
        if not explicit_output:  # the output type was inferred from the tools' return annotations
            shown = f'{shown}, ' * bool(shown) + f'the output type {output_type!r} inferred from the tools'
        raise ConfigurationError(
            f'agentool {name!r}: pydantic_ai.Agent cannot be built with {shown}: {type(error).__name__}: {error}',
            agentool=name,
            options=sorted(given),
        ) from error
