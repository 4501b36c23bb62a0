"""`AgenToolToolset`: registered agentools as pydantic-ai tools an LLM agent can call.

Each exposed operation is one tool taking the fields that operation uses, checked before the tool
runs: a mistake is pydantic-ai's retry prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool

from ._interface import ARGUMENTS_ADAPTER, OperationInterface, build_interfaces
from ._options import check_function, check_limit, check_text
from .core.operation import UNSET, Policy, deps_from, run_operation
from .core.registry import AgenToolRegistry, get_registry
from .errors import InvalidInputError
from .filters import ExposedOperation, Selectors, select_operations

__all__ = ('AgenToolToolset', 'DepsFunc', 'METADATA_KEY')

METADATA_KEY = 'agentool'
"""Key of the operation's metadata in `ToolDefinition.metadata`."""

DepsFunc = Callable[[RunContext[Any], str], Any]
"""Gives the deps for agentool `name` (second argument) from the LLM run's context (sync or async)."""

# A tool's `ModelRetry` and `ToolFailed` reach pydantic-ai, which retries or reports them.
_TOOLSET = Policy(surface='toolset', typed_errors=False)


class AgenToolToolset(AbstractToolset[AgentDepsT]):
    """A toolset with one tool per selected agentool operation, selected once by `agentool.filters`.

    The LLM toolset guide shows it in use: `Agent(model, toolsets=[AgenToolToolset(include=[...])])`.

    Args:
        deps: Gives each agentool's deps from the run context; by default the run's, else the injector's.
        max_retries: Retries allowed per tool; by default the agent's.
        id: The toolset's id (needed for durable execution).

    Selection raises as `agentool.filters.select_operations` does.
    """

    def __init__(
        self,
        include: Selectors | None = None,
        *,
        exclude: Selectors = (),
        registry: AgenToolRegistry | None = None,
        prefix: str = '',
        separator: str = '_',
        deps: DepsFunc | None = None,
        max_retries: int | None = None,
        id: str | None = None,
    ) -> None:
        check_function('deps', deps, optional=True, takes=('ctx', 'agentool'))
        check_limit('max_retries', max_retries, optional=True, minimum=0)
        check_text('id', id, optional=True)
        registry = get_registry() if registry is None else registry
        selected = select_operations(registry, include=include, exclude=exclude, prefix=prefix, separator=separator)
        self._interfaces = build_interfaces(registry, selected)
        self._tool_defs = {name: _tool_def(interface) for name, interface in self._interfaces.items()}
        self._validators = {name: _ArgumentsValidator(interface) for name, interface in self._interfaces.items()}
        self._deps = deps
        self.max_retries = max_retries
        self._id = id

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def operations(self) -> list[ExposedOperation]:
        """The exposed operations, in tool order."""
        return [interface.exposed for interface in self._interfaces.values()]

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        max_retries = ctx.max_retries if self.max_retries is None else self.max_retries
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=self._tool_defs[name],
                max_retries=max_retries,
                args_validator=self._validators[name],
            )
            for name in self._interfaces
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        interface = self._interfaces[name]
        exposed = interface.exposed
        try:
            # Validated already: this builds the input model from the plain arguments hooks see.
            input = interface.validate(tool_args, context=ctx.validation_context)
        except (ValidationError, InvalidInputError) as error:  # only if a hook changed the arguments after validation
            raise ModelRetry(interface.describe(error)) from error
        # The toolset's `deps` function wins over the run's deps; a run given none gets the injector's.
        deps = self._deps
        provider = None if deps is None else deps_from(lambda: deps(ctx, exposed.agentool))
        given = UNSET if deps is not None or ctx.deps is None else ctx.deps
        result = await run_operation(
            _TOOLSET, exposed.manager, input, ctx, deps=given, provider=provider, tracer=ctx.tracer
        )
        return interface.llm_output(result)


class _ArgumentsValidator:
    """pydantic-ai's argument validator for one tool: the arguments as given, once the schema accepts them."""

    def __init__(self, interface: OperationInterface) -> None:
        self._interface = interface

    def validate_json(
        self,
        input: str | bytes | bytearray,
        *,
        allow_partial: bool | Literal['off', 'on', 'trailing-strings'] = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        # Size first: arguments over the agentool's `max_input_bytes` are refused before they are parsed.
        manager = self._interface.exposed.manager
        if allow_partial in (False, 'off') and len(input) > manager.config.max_input_bytes:
            try:
                manager.validate_json(bytes(input) if isinstance(input, bytearray) else input)
            except InvalidInputError as error:  # `InputTooLargeError`, checked before any parsing
                raise self._interface.validation_error(error) from error
        arguments = ARGUMENTS_ADAPTER.validate_json(input, experimental_allow_partial=allow_partial)
        return self._check(arguments, allow_partial, kwargs.get('context'))

    def validate_python(
        self, input: Any, *, allow_partial: bool | Literal['off', 'on', 'trailing-strings'] = False, **kwargs: Any
    ) -> dict[str, Any]:
        arguments = ARGUMENTS_ADAPTER.validate_python(input, experimental_allow_partial=allow_partial)
        return self._check(arguments, allow_partial, kwargs.get('context'))

    def _check(
        self, arguments: dict[str, Any], allow_partial: bool | Literal['off', 'on', 'trailing-strings'], context: Any
    ) -> dict[str, Any]:
        # Partial (still streaming) arguments are only parsed; the complete call is checked in full.
        if allow_partial in (False, 'off'):
            try:
                self._interface.validate(arguments, context=context)
            except InvalidInputError as error:
                # pydantic-ai retries on a `ValidationError` only: the typed error goes back so.
                raise self._interface.validation_error(error) from error
        return arguments


def _tool_def(interface: OperationInterface) -> ToolDefinition:
    route = interface.exposed.route
    hints = {'read_only': route.read_only, 'idempotent': route.idempotent, 'destructive': route.destructive}
    return ToolDefinition(
        name=interface.exposed.name,
        description=interface.description,
        parameters_json_schema=interface.parameters_json_schema,
        # A tool that is not concurrency-safe runs alone (pydantic-ai's barrier semantics).
        sequential=not route.concurrent_safe,
        metadata={METADATA_KEY: {**operation_metadata(interface.exposed), **hints}},
        return_schema=interface.output_json_schema,
    )


def operation_metadata(exposed: ExposedOperation) -> dict[str, Any]:
    """What a tool's metadata says of its operation, here and in an MCP tool's `_meta`."""
    route = exposed.route
    return {
        'agentool': exposed.agentool,
        'operation': exposed.operation,
        'concurrent_safe': route.concurrent_safe,
        'max_output_chars': route.max_output_chars,
        'tags': sorted(exposed.tags),
        'deprecated': route.deprecated,
    }
