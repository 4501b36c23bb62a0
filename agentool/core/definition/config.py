"""What defines an agentool: its routes, its tools' metadata and its configuration (plain, checked data)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from types import NoneType
from typing import Any, Literal, TypeAlias, cast

from pydantic import BaseModel

from ..._options import (
    aware,
    check_examples,
    check_flag,
    check_function,
    check_instance,
    check_instances,
    check_label,
    check_labels,
    check_limit,
    check_string_map,
    check_strings,
    check_text,
    refuse,
)
from ...errors import ConfigurationError
from ..output import check_output_type

__all__ = (
    'Transform',
    'Route',
    'RouteSpec',
    'RoutingConfig',
    'RouteMap',
    'ToolMetadata',
    'ConfigProblem',
    'AgenToolConfig',
    'DEFAULT_MAX_INPUT_BYTES',
    'now',
    'check_routing',
    'check_tools',
)

DEFAULT_MAX_INPUT_BYTES = 1024 * 1024
"""Default limit on a prompt's size, checked before parsing (1 MiB)."""

Transform: TypeAlias = Callable[[Any], Mapping[str, Any]]
"""Turns the validated input model into keyword arguments for the routed tool."""


@dataclass(frozen=True, kw_only=True)
class Route:
    """Where one operation goes: a tool name and an optional transform (else fields are matched by name)."""

    tool: str
    transform: Transform | None = None
    """Builds the tool's keyword arguments from the validated input; `None` matches fields by name."""
    description: str | None = None
    """Defaults to the tool's docstring summary in catalogs."""
    read_only: bool = False
    """The operation changes nothing (MCP `readOnlyHint`)."""
    idempotent: bool = False
    """Repeating the operation with the same input has no further effect (MCP `idempotentHint`)."""
    destructive: bool = False
    """The operation may delete or overwrite data (MCP `destructiveHint`)."""
    concurrent_safe: bool = True
    """Calls may run concurrently; `False` maps to pydantic-ai's `sequential` tool flag."""
    max_output_chars: int | None = None
    """LLM-facing surfaces truncate longer outputs, with a visible marker."""
    tags: tuple[str, ...] = ()
    deprecated: bool = False
    """Still routed, but flagged in catalogs and tool descriptions."""
    retries: int = 0
    """In a durable run, how many more times the tool is called after an unexpected exception; idempotent only."""
    durable: bool = True
    """In a durable run, the operation is its own journaled unit; `False` runs it inline (cheap reads)."""

    def __post_init__(self) -> None:
        tool, transform, retries = cast(object, self.tool), cast(object, self.transform), cast(object, self.retries)
        check_label('tool', tool, what='Route(tool=...)')
        check_function('transform', transform, optional=True)
        check_limit('max_output_chars', self.max_output_chars, optional=True)
        check_text('description', self.description, optional=True)
        object.__setattr__(self, 'tags', tuple(check_strings('tags', self.tags)))
        for flag in ('read_only', 'idempotent', 'destructive', 'concurrent_safe', 'deprecated', 'durable'):
            check_flag(flag, getattr(self, flag))
        if not isinstance(retries, int) or isinstance(retries, bool):
            raise refuse('retries', 'an int', retries)

    def __iter__(self) -> Iterator[Any]:
        """`tool, transform = route`, as the architecture guide unpacks it."""
        yield self.tool
        yield self.transform

    def __getitem__(self, index: int) -> Any:
        """`route[0]` is the tool name, `route[1]` the transform."""
        return (self.tool, self.transform)[index]


RouteSpec: TypeAlias = str | tuple[str] | tuple[str, Transform | None] | Route
"""An `operation_map` value: a tool name, `(tool,)`, `(tool, transform)` or a `Route`."""


def _to_route(operation: str, spec: object) -> Route:
    if isinstance(spec, Route):
        return spec
    if isinstance(spec, str):
        return Route(tool=spec)
    if isinstance(spec, tuple):
        items: tuple[object, ...] = spec  # pyright: ignore[reportUnknownVariableType]
        transform = items[1] if len(items) == 2 else None
        if 1 <= len(items) <= 2 and isinstance(items[0], str) and (transform is None or callable(transform)):
            return Route(tool=items[0], transform=cast('Transform | None', transform))
    raise ConfigurationError(
        f'operation_map[{operation!r}] must be a tool name, (tool_name,), (tool_name, transform) or a Route; '
        f'got {spec!r}',
        operation=operation,
    )


class RouteMap(Mapping[str, Route]):
    """`RoutingConfig.operation_map`: operation → `Route`, read-only (routes are checked at creation)."""

    __slots__ = ('_routes',)

    def __init__(self, routes: Mapping[str, RouteSpec] | None = None) -> None:
        given = cast(object, {} if routes is None else routes)
        check_instance('operation_map', given, Mapping, expected='a mapping of operation to route (a dict)')
        items = cast('Mapping[object, RouteSpec]', given).items()
        if bad := [op for op, _ in items if not isinstance(op, str)]:
            raise refuse('operation_map', 'keyed by operation names (strings)', bad[0])
        for op, _ in items:  # an operation name is listed, rendered and matched: no control characters
            check_label('operation_map', op, what='an operation name')
        self._routes = {cast(str, op): _to_route(cast(str, op), spec) for op, spec in items}

    def __getitem__(self, operation: str) -> Route:
        return self._routes[operation]

    def __iter__(self) -> Iterator[str]:
        return iter(self._routes)

    def __len__(self) -> int:
        return len(self._routes)

    def __contains__(self, operation: object) -> bool:
        return operation in self._routes

    def get(self, operation: str, default: Any = None) -> Any:  # a dict's speed on the catalog paths
        return self._routes.get(operation, default)

    def __setitem__(self, operation: str, spec: RouteSpec) -> None:
        raise _read_only('RoutingConfig.operation_map', operation, operation=operation)

    def __delitem__(self, operation: str) -> None:
        raise _read_only('RoutingConfig.operation_map', operation, operation=operation)

    def __repr__(self) -> str:
        return f'RouteMap({self._routes!r})'


@dataclass(init=False, unsafe_hash=True)
class RoutingConfig:
    """Maps each value of the operation field to a tool (a `RouteSpec`); read-only once built."""

    operation_field: str
    operation_map: RouteMap
    """Operation value → route, normalised to `Route` objects."""

    def __init__(
        self, operation_field: str = 'operation', operation_map: Mapping[str, RouteSpec] | None = None
    ) -> None:
        if not (isinstance(cast(object, operation_field), str) and operation_field):
            raise refuse('operation_field', 'a field name', operation_field)
        object.__setattr__(self, 'operation_field', operation_field)
        object.__setattr__(self, 'operation_map', RouteMap(operation_map))

    # Not `frozen=True`, whose `FrozenInstanceError` is no agentool error; `unsafe_hash=True` hashes alike.
    def __setattr__(self, name: str, value: object) -> None:
        raise _read_only('RoutingConfig', name, option=name)

    def __delattr__(self, name: str) -> None:
        raise _read_only('RoutingConfig', name, option=name)


def _read_only(what: str, changed: str, **details: str) -> ConfigurationError:
    return ConfigurationError(
        f'{what} is read-only (tried to change {changed!r}): routes are checked when the agentool is created; '
        'build a new RoutingConfig and create the agentool again with replace=True',
        **details,
    )


@dataclass(frozen=True, kw_only=True)
class ConfigProblem:
    """One problem of a configuration: an `'error'` keeps it from running; a `'warning'` likely misbehaves."""

    kind: str
    """Errors: `no_operation_field`, `empty_operation_map`, `unrouted_operation`, `unproducible_operation`,
    `missing_tool`, `duplicate_tool`, `unfillable_parameter`, `unproducible_output`, `retries_not_idempotent`,
    `bad_schema`. Warning: `unfillable_default`. `field` is the field probably meant, where one is."""
    severity: Literal['error', 'warning'] = 'error'
    message: str
    operation: str | None = None
    tool: str | None = None
    parameter: str | None = None
    field: str | None = None
    note: str | None = None
    """What problems of one kind share (the input's fields, the tools given): said once in the error."""

    def as_dict(self) -> dict[str, str | None]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, kw_only=True)
class ToolMetadata:
    """What agentool knows about one tool function (for catalogs and output inference)."""

    name: str
    description: str | None = None
    """The docstring's summary (its first paragraph)."""
    is_async: bool = False
    parameters: list[str] = field(default_factory=list[str])
    """Parameter names, without the `RunContext` parameter."""
    parameter_types: dict[str, str] = field(default_factory=dict[str, str])
    return_type: str | None = None
    """The return annotation as text (`dict[str, Any]`, never quoted)."""
    return_type_annotation: Any = field(default=None, repr=False, compare=False)
    """The return annotation itself, used to infer the output type."""
    docstring: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Catalogs and docs read it: a wrong type is refused here, not in each of them.
        check_text('name', self.name)
        check_label('name', self.name, what='a tool name')
        for option in ('description', 'return_type', 'docstring'):
            check_text(option, getattr(self, option), optional=True)
        check_flag('is_async', self.is_async)
        object.__setattr__(self, 'parameters', check_strings('parameters', self.parameters))
        object.__setattr__(self, 'parameter_types', check_string_map('parameter_types', self.parameter_types))


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class AgenToolConfig:
    """Everything that defines one agentool, each field checked when built (`ConfigurationError`).

    The fields up to `updated_at` are the architecture guide's, in its order."""

    input_schema: type[BaseModel]
    routing_config: RoutingConfig
    output_type: Any = None
    """The typed output of every operation; `None` means JSON text."""
    description: str | None = None
    version: str = '1.0.0'
    tags: list[str] = field(default_factory=list[str])
    tools_metadata: list[ToolMetadata] = field(default_factory=list[ToolMetadata])
    dependencies: list[str] = field(default_factory=list[str])
    examples: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)
    _: KW_ONLY
    tools: Sequence[Callable[..., Any]] = ()
    """Looked up by `__name__`."""
    deps_type: Any = NoneType
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES

    def __post_init__(self) -> None:
        check_routing(self.routing_config)
        self.tools = check_tools(self.tools)
        self.tools_metadata = check_instances('tools_metadata', self.tools_metadata, ToolMetadata)
        check_output_type(self.output_type)
        check_limit('max_input_bytes', self.max_input_bytes)
        check_text('description', self.description, optional=True)
        check_text('version', self.version)
        self.tags = check_strings('tags', self.tags)
        self.dependencies = check_labels('dependencies', self.dependencies)
        self.examples = check_examples(self.examples)
        self.created_at = aware('created_at', self.created_at)
        self.updated_at = aware('updated_at', self.updated_at)


def check_routing(routing_config: object, *, agentool: str | None = None) -> RoutingConfig:
    if isinstance(routing_config, RoutingConfig):
        return routing_config
    shown = repr(routing_config)
    hint = ' (wrap a dict in RoutingConfig(operation_map=...))' if isinstance(routing_config, Mapping) else ''
    raise ConfigurationError(
        f'routing_config must be a RoutingConfig{hint}; got {shown}',
        agentool=agentool,
        option='routing_config',
        value=shown,
    )


def check_tools(tools: object, *, agentool: str | None = None) -> tuple[Callable[..., Any], ...]:
    """`tools` as a tuple of callables; else `ConfigurationError`."""
    shown = repr(tools)
    if isinstance(tools, Iterable) and not isinstance(tools, str | bytes | Mapping):
        items = tuple(cast('Iterable[object]', tools))
        if not (bad := [item for item in items if not callable(item)]):
            return cast('tuple[Callable[..., Any], ...]', items)
        problem = f'{bad[0]!r} is not callable (pass the function itself, not its name)'
    else:
        problem = f'got {shown}, not a list'
    raise ConfigurationError(
        f'tools must be a list of tool functions; {problem}', agentool=agentool, option='tools', value=shown
    )
