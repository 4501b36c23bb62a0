"""`AgenToolManager`: validated input → operation → route → transform → tool → typed output."""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import anyio.to_thread
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_ai import ModelRetry, RunContext

from .._answering import is_deterministic
from .._options import check_instance, check_name
from ..errors import (
    AgenToolError,
    InputTooLargeError,
    InvalidInputError,
    OutputError,
    ToolArgumentError,
    TransformError,
)
from .definition import (
    AgenToolConfig,
    CompiledRoute,
    Requirements,
    ToolSignature,
    check_routes,
    configuration_error,
    json_key,
    loads,
    merge_errors,
    operation_requirements,
    tool_list,
)
from .output import output_value_type
from .request import (
    MANAGER_TOOL_NAME,
    invalid_input,
    invalid_json,
    json_validator,
    not_an_object,
    operation_name,
    unknown_operation,
    unparsable_json,
)

if TYPE_CHECKING:
    from .definition import ConfigProblem, RoutingConfig, Transform

__all__ = ('AgenToolManager', 'MANAGER_TOOL_NAME')

_E = TypeVar('_E', bound=AgenToolError)


class AgenToolManager:
    """Runs one agentool's operations. Built (and checked) once per registration.

    A configuration that cannot run can still be inspected; validating or running input then raises
    one `ConfigurationError` listing every problem. A manager is also a tool function:
    `agent.tool(name='__agentool_manager__')(manager)` registers it, as the guide does.
    `tool_functions` (a list, or a dict of name → function) replaces `config.tools`.
    """

    def __init__(
        self,
        name: str,
        config: AgenToolConfig,
        tool_functions: Sequence[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
        *,
        routes: Mapping[str, CompiledRoute] | None = None,
    ) -> None:
        check_instance('config', config, AgenToolConfig, agentool=check_name(name))  # the guide builds one by hand
        if tool_functions is not None:
            config = dataclasses.replace(config, tools=tool_list(name, tool_functions))
        problems: list[ConfigProblem] = []
        if routes is not None and tool_functions is None:
            self._routes = dict(routes)
        else:
            self._routes, problems, _ = check_routes(name, config)
        self.problems: tuple[ConfigProblem, ...] = tuple(problems)
        """Why this manager cannot run (`()` when it can)."""
        self.name = name
        self.config = config
        self.input_schema = config.input_schema
        if any(problem.kind == 'bad_schema' for problem in problems):
            self.parse_json: Callable[[str | bytes], BaseModel] = self._refuse
        else:
            self.parse_json = json_validator(config.input_schema)
        """The input schema's own JSON validation: no size limit, and pydantic's `ValidationError` on failure."""
        self.operation_field = config.routing_config.operation_field
        self.__name__ = MANAGER_TOOL_NAME
        self.__qualname__ = f'{type(self).__qualname__}({name!r})'
        self.__annotations__ = {'ctx': RunContext[Any], 'kwargs': Any, 'return': Any}
        for operation, route in self._routes.items():
            # Only an operation that needs more than the schema checks carries its requirements: the
            # call path checks the others with one attribute read.
            if (needs := self._requirements_of(route)).needed or needs.allowed is not None:
                self._routes[operation] = dataclasses.replace(route, requirements=needs)
        self.guarded = any(route.requirements is not None for route in self._routes.values())
        self.ctx_operations = frozenset(op for op, route in self._routes.items() if route.tool.takes_ctx)
        self.checks_output = config.output_type is not None
        self.output_class: type | None = config.output_type if isinstance(config.output_type, type) else None
        self._output_adapter: TypeAdapter[Any] | None = None

    @property
    def routing_config(self) -> RoutingConfig:
        return self.config.routing_config

    def get_tool_schema(self) -> dict[str, Any]:
        """The JSON schema of the manager tool's arguments: the input schema's, with `properties` and `required`."""
        if (json_schema := getattr(self.input_schema, 'model_json_schema', None)) is None:  # not a pydantic model
            self._refuse()
        schema: dict[str, Any] = json_schema()
        return {**schema, 'properties': schema.get('properties', {}), 'required': schema.get('required', [])}

    @property
    def operations(self) -> list[str]:
        """The routed operations, in routing order."""
        return list(self._routes)

    def operation_of(self, input: BaseModel) -> str:
        """The operation validated `input` names (an Enum member by its value)."""
        return operation_name(getattr(input, self.operation_field))

    def tool_for(self, operation: str) -> ToolSignature:
        return self._routes[operation].tool

    def requirements(self, operation: str) -> Requirements:
        """What `operation` uses and needs from its input (kept if it needs more than the schema checks)."""
        if (route := self._routes.get(operation)) is None:
            raise unknown_operation(self.name, operation, list(self._routes))
        return route.requirements or self._requirements_of(route)

    def _requirements_of(self, route: CompiledRoute) -> Requirements:
        spec = self.routing_config.operation_map[route.operation]
        return operation_requirements(self.input_schema, self.operation_field, route.tool, route.operation, spec)

    @functools.cached_property
    def keys(self) -> dict[str, str]:
        """JSON key -> input field name, in schema order."""
        return {json_key(name, info): name for name, info in getattr(self.input_schema, 'model_fields', {}).items()}

    def check_requirements(self, input: BaseModel, data: Any = None) -> None:
        """Raise `InputValidationError` unless validated `input` (given as `data`) has what its operation needs."""
        route = self._routes.get(self.operation_of(input))
        if route is None or (needs := route.requirements) is None or needs.satisfied_by(input):
            return
        data = input.model_dump(mode='json', by_alias=True, exclude_unset=True) if data is None else data
        raise invalid_input(self.name, needs.operation, needs.problems(input.model_fields_set, data))

    def _refuse(self, data: object = None) -> NoReturn:
        raise configuration_error(self.name, self.problems)

    def validate_json(self, data: str | bytes, *, routed: bool = True) -> BaseModel:
        """Validate a JSON prompt against the input schema, raising a typed `InvalidInputError`.

        `routed=False` validates even when the configuration cannot route (an agent assembled by hand).
        """
        if routed and self.problems:
            self._refuse()
        # UTF-8 size without a copy for ASCII text (`isascii` is O(1) on str); 'surrogatepass' so a lone
        # surrogate is counted and then refused by validation as a typed error, not a UnicodeEncodeError.
        if isinstance(data, bytes):
            size = len(data)
        else:
            size = len(data) if data.isascii() else len(data.encode('utf-8', 'surrogatepass'))
        if size > self.config.max_input_bytes:
            raise InputTooLargeError(
                f'input to agentool {self.name!r} is {size} bytes, over the limit of '
                f'{self.config.max_input_bytes} bytes (max_input_bytes)',
                agentool=self.name,
                size=size,
                limit=self.config.max_input_bytes,
            )
        try:
            validated = self.parse_json(data)
        except ValidationError as error:
            raise self._diagnose_json(data, error) from None
        if self.guarded:
            self.check_requirements(validated, loads(data))
        return validated

    def validate_python(self, data: Any) -> BaseModel:
        """Validate an already-parsed value (a dict or a model) against the input schema."""
        if self.problems:
            self._refuse()
        if isinstance(data, self.input_schema):
            return data
        if not isinstance(data, Mapping):
            raise not_an_object(self.name, self.operation_field, data)
        try:
            validated = self.input_schema.model_validate(data)
        except ValidationError as error:
            raise self._diagnose(data, error) from None  # pyright: ignore[reportUnknownArgumentType]
        if self.guarded:
            self.check_requirements(validated, data)
        return validated

    def _diagnose_json(self, data: str | bytes, error: ValidationError) -> Exception:
        # The fast path failed; parse again with the standard library to say precisely why.
        try:
            parsed = json.loads(data)
        except json.JSONDecodeError as bad:
            return invalid_json(self.name, bad)
        except (RecursionError, ValueError) as bad:  # too deep, a huge integer, bytes that are not UTF-8
            return unparsable_json(self.name, data, error, bad)
        if error.errors(include_url=False)[0]['type'] == 'json_invalid':  # JSON, but nested past pydantic's limit
            return unparsable_json(self.name, data, error, error)
        if not isinstance(parsed, dict):
            return not_an_object(self.name, self.operation_field, parsed)
        return self._diagnose(parsed, error)  # pyright: ignore[reportUnknownArgumentType]

    def _diagnose(self, data: Mapping[str, Any], error: ValidationError) -> Exception:
        operation = data.get(self.operation_field)
        routes = self.routing_config.operation_map  # all of them: `validate_json(routed=False)` diagnoses too
        if isinstance(operation, str) and operation not in routes:
            return unknown_operation(self.name, operation, list(routes))
        try:
            errors: list[dict[str, Any]] = json.loads(error.json(include_url=False))
        except ValueError:  # an input JSON cannot carry (a lone surrogate): report the errors without inputs
            errors = json.loads(error.json(include_url=False, include_input=False))
        route = self._routes.get(operation) if isinstance(operation, str) else None
        if route is not None and (needs := route.requirements) is not None:
            # Every failing field at once: the schema's errors and this operation's own, in field order.
            given = {self.keys[key] for key in data if key in self.keys}
            errors = merge_errors(self.keys, errors, needs.problems(given, data))
        return invalid_input(self.name, operation if isinstance(operation, str) else None, errors)

    async def __call__(self, ctx: RunContext[Any], **kwargs: Any) -> Any:
        """The manager tool's body: validate `kwargs` (refused: a typed error, or a retry for an LLM), route, call."""
        try:
            input = self.validate_python(kwargs)
        except InvalidInputError as error:
            model = getattr(ctx, 'model', None)  # None: called by hand, outside any run
            raise (error if model is None or is_deterministic(model) else ModelRetry(str(error))) from None
        return await self.execute(ctx, input)

    async def execute(self, ctx: RunContext[Any], input: BaseModel) -> Any:
        """Route validated `input` to its tool, call it and return its checked output (its exceptions unchanged)."""
        if self.problems:
            self._refuse()
        result = await self.invoke(ctx, input)
        if self.checks_output and type(result) is not self.output_class:
            return self.check_output(input, result)
        return result

    def invoke(self, ctx: RunContext[Any], input: BaseModel) -> Awaitable[Any]:
        """Start the tool validated `input` routes to: `execute` without the output check.

        Await the result and pass it through `check_output` unless `checks_output` is false or its type is
        exactly `output_class`: hot paths use this pair to avoid a coroutine of their own.
        """
        operation = getattr(input, self.operation_field)
        try:
            route = self._routes.get(operation)
        except TypeError:  # an unhashable value cannot name a route
            route = None
        if route is None:
            route = self._route_slow(operation)
        if (needs := route.requirements) is not None and not needs.satisfied_by(input):
            self.check_requirements(input)  # raises the typed error
        if route.gate is None:
            return self._start(route, ctx, input)
        return route.gate.run(functools.partial(self._start, route, ctx, input))

    def _start(self, route: CompiledRoute, ctx: RunContext[Any], input: BaseModel) -> Awaitable[Any]:
        tool = route.tool
        if (positional := route.positional) is not None and tool.is_async:
            args = positional(input)
            # Spelt out for the common arities, the call builds no argument tuple (`f(ctx, *args)` copies one).
            if len(args) == 2:
                a, b = args
                return tool.function(ctx, a, b) if tool.takes_ctx else tool.function(a, b)
            if not tool.takes_ctx:
                return tool.function(*args)
            return tool.function(ctx, args[0]) if len(args) == 1 else tool.function(ctx, *args)
        if route.transform is None:
            kwargs: dict[str, Any] = {}
            for name in route.always_fields:
                kwargs[name] = getattr(input, name)
            if route.if_set_fields:
                fields_set = input.model_fields_set
                for name in route.if_set_fields:
                    if name in fields_set:
                        kwargs[name] = getattr(input, name)
        else:
            kwargs = self._arguments(route, route.transform, input)
        if tool.is_async:
            return tool.function(ctx, **kwargs) if tool.takes_ctx else tool.function(**kwargs)
        args = (ctx,) if tool.takes_ctx else ()
        return _settled(anyio.to_thread.run_sync(functools.partial(tool.function, *args, **kwargs)))

    def check_output(self, input: BaseModel, result: Any) -> Any:
        """`result` validated against the output type, or `OutputError` naming the operation and tool."""
        if self._output_adapter is None:
            # Made on first use: most results pass by their class. An output function's result is
            # left to pydantic-ai's output stage.
            if (value_type := output_value_type(self.config.output_type)) is None:
                return result
            self._output_adapter = TypeAdapter[Any](value_type)
        route = self._routes[self.operation_of(input)]
        try:
            return self._output_adapter.validate_python(result)
        except ValidationError as error:
            raise self._route_error(
                OutputError,
                route,
                f'agentool {self.name!r}, operation {route.operation!r}: tool {route.tool.name!r} returned a '
                f'value that does not fit the output type {output_value_type(self.config.output_type)!r}: {error}',
            ) from error

    def _route_slow(self, operation: Any) -> CompiledRoute:
        # Enum members whose hash differs from their value's, `Literal[1, 2]` values (routed as '1', '2',
        # as `operation_of` names them), and operations with no route.
        if isinstance(operation, enum.Enum | int | float):
            operation = str(getattr(operation, 'value', operation))
            if (route := self._routes.get(operation)) is not None:
                return route
        raise unknown_operation(self.name, operation, list(self._routes))

    def _route_error(self, error_type: type[_E], route: CompiledRoute, message: str, **details: str) -> _E:
        return error_type(message, agentool=self.name, operation=route.operation, tool=route.tool.name, **details)

    def _arguments(self, route: CompiledRoute, transform: Transform, input: BaseModel) -> dict[str, Any]:
        try:
            produced = transform(input)
        except Exception as error:
            raise self._route_error(
                TransformError,
                route,
                f'agentool {self.name!r}: the transform of operation {route.operation!r} raised '
                f'{type(error).__name__}: {error}',
            ) from error
        if type(produced) is dict:  # the usual case; the call copies the arguments anyway
            kwargs: dict[str, Any] = produced  # pyright: ignore[reportUnknownVariableType]  # no `cast` call on the hot path
            tool = route.tool
            if kwargs.keys() >= tool.required and (tool.accepts_var_kwargs or kwargs.keys() <= route.param_set):
                return kwargs
            self._check_arguments(route, kwargs)
        if not isinstance(produced, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # a user's transform
            raise self._route_error(
                TransformError,
                route,
                f'agentool {self.name!r}: the transform of operation {route.operation!r} returned '
                f'{type(produced).__name__}, expected a dict of arguments for tool {route.tool.name!r}',
            )
        kwargs = dict(cast('Mapping[str, Any]', produced))
        self._check_arguments(route, kwargs)
        return kwargs

    def _check_arguments(self, route: CompiledRoute, kwargs: dict[str, Any]) -> None:
        tool = route.tool
        if missing := sorted(tool.required.difference(kwargs)):
            parameter, problem = missing[0], 'is required but the transform did not provide it'
        elif not tool.accepts_var_kwargs and (unexpected := sorted(set(kwargs).difference(tool.params))):
            parameter, problem = unexpected[0], 'is not a parameter of the tool'
        else:
            return
        raise self._route_error(
            ToolArgumentError,
            route,
            f'agentool {self.name!r}, operation {route.operation!r}: parameter {parameter!r} of tool '
            f'{tool.name!r} {problem}',
            parameter=parameter,
        )


async def _settled(pending: Awaitable[Any]) -> Any:
    """A sync-called tool's result, awaited when it is an awaitable (a function a decorator left without `async`)."""
    result = await pending
    return await result if inspect.isawaitable(result) else result
