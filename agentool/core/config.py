"""What defines an agentool: its routes, its tools' metadata and its configuration.

Plain data with no behaviour beyond normalisation and checks of its own fields; the registry
stores it, the manager compiles it, the catalog describes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import NoneType
from typing import Any, TypeAlias, cast

from pydantic import BaseModel

from ..errors import ConfigurationError

__all__ = (
    'Transform',
    'Route',
    'RouteSpec',
    'RoutingConfig',
    'ToolMetadata',
    'AgenToolConfig',
    'DEFAULT_MAX_INPUT_BYTES',
    'now',
)

DEFAULT_MAX_INPUT_BYTES = 1024 * 1024
"""Default limit on a prompt's size, checked before parsing (1 MiB)."""

Transform: TypeAlias = Callable[[Any], Mapping[str, Any]]
"""Turns the validated input model into keyword arguments for the routed tool."""


@dataclass(frozen=True, kw_only=True)
class Route:
    """Where one operation goes: a tool name and an optional transform.

    Without a transform, the manager passes the input fields whose names match the tool's
    parameters (fields left unset are skipped when the parameter has a default).
    """

    tool: str
    """Name of the tool function the operation calls."""
    transform: Transform | None = None
    """Builds the tool's keyword arguments from the validated input; `None` matches fields by name."""
    description: str | None = None
    """What the operation does; defaults to the tool's docstring in catalogs."""
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
    """Tags for catalogs and filters."""
    deprecated: bool = False
    """Still routed, but flagged in catalogs and tool descriptions."""


RouteSpec: TypeAlias = str | tuple[str] | tuple[str, Transform | None] | Route
"""Accepted forms of an `operation_map` value: a tool name, `(tool,)`, `(tool, transform)` or a `Route`."""


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


@dataclass(init=False)
class RoutingConfig:
    """Maps each value of the operation field to a tool.

    Example:
        ```python {test="skip"}
        RoutingConfig(operation_map={
            'read': 'storage_read',                                   # fields matched by name
            'write': ('storage_write', lambda x: {'key': x.key, 'data': x.data}),
        })
        ```
    """

    operation_field: str
    """Name of the input field that selects the operation."""
    operation_map: dict[str, Route]
    """Operation value → route, normalised to `Route` objects."""

    def __init__(
        self, operation_field: str = 'operation', operation_map: Mapping[str, RouteSpec] | None = None
    ) -> None:
        self.operation_field = operation_field
        self.operation_map = {op: _to_route(op, spec) for op, spec in (operation_map or {}).items()}


@dataclass(frozen=True, kw_only=True)
class ToolMetadata:
    """What agentool knows about one tool function (for catalogs and output inference)."""

    name: str
    description: str | None
    is_async: bool
    parameters: list[str]
    parameter_types: dict[str, str]
    return_type: str | None
    return_annotation: Any = field(default=None, repr=False, compare=False)
    """The return annotation itself (not a string), used to infer the output type."""


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(kw_only=True)
class AgenToolConfig:
    """Everything that defines one agentool. Built by `create_agentool`, stored by the registry."""

    input_schema: type[BaseModel]
    routing_config: RoutingConfig
    tools: Sequence[Callable[..., Any]] = ()
    """The tool functions operations route to, looked up by `__name__`."""
    output_type: Any = None
    """The typed output of every operation; `None` means JSON text."""
    deps_type: Any = NoneType
    description: str | None = None
    version: str = '1.0.0'
    tags: list[str] = field(default_factory=list[str])
    tools_metadata: list[ToolMetadata] = field(default_factory=list[ToolMetadata])
    dependencies: list[str] = field(default_factory=list[str])
    examples: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    created_at: datetime = field(default_factory=now)
    updated_at: datetime = field(default_factory=now)

    def __post_init__(self) -> None:
        for stamp in (self.created_at, self.updated_at):
            if stamp.tzinfo is None:
                raise ConfigurationError('created_at and updated_at must be timezone-aware datetimes')
