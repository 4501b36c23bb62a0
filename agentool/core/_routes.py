"""Route compilation: an agentool's configuration checked and turned into one `CompiledRoute` per operation.

Done once per registration, so `AgenToolManager`'s per-call path is a dict hit plus precomputed
field tuples (or a positional reader). Every inconsistency in the configuration is refused here
with `ConfigurationError`, before any call.
"""

from __future__ import annotations

import enum
import inspect
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

from pydantic import BaseModel

from ..errors import ConfigurationError
from ._signature import ToolSignature, read_signature

if TYPE_CHECKING:
    from .config import AgenToolConfig, Transform

__all__ = ('CompiledRoute', 'compile_routes')


@dataclass(frozen=True)
class CompiledRoute:
    """One operation's route, resolved at registration: the tool's signature and how to fill its arguments."""

    operation: str
    tool: ToolSignature
    transform: Transform | None
    matched_fields: tuple[str, ...]
    """For the default transform: input fields passed to the tool because the names match."""
    always_fields: tuple[str, ...] = ()
    """The matched fields the tool requires: always passed."""
    if_set_fields: tuple[str, ...] = ()
    """The matched fields the tool has a default for: passed only when the input set them."""
    param_set: frozenset[str] = frozenset()
    """The tool's keyword parameters, for checking a transform's arguments in one set operation."""
    positional: Callable[[BaseModel], tuple[Any, ...]] | None = None
    """When the matched fields are exactly the tool's leading positional parameters: reads them as
    the positional arguments, which is cheaper than building a keyword dict."""


def compile_routes(name: str, config: AgenToolConfig) -> dict[str, CompiledRoute]:
    """The routes of agentool `name`, by operation in routing order; `ConfigurationError` if inconsistent."""
    input_schema = config.input_schema
    operation_field = config.routing_config.operation_field
    field_info = input_schema.model_fields.get(operation_field)
    if field_info is None:
        raise ConfigurationError(
            f'agentool {name!r}: input schema {input_schema.__name__} has no operation field {operation_field!r}',
            agentool=name,
            field=operation_field,
        )
    tools = {getattr(t, '__name__', repr(t)): t for t in config.tools}
    routes = config.routing_config.operation_map
    if not routes:
        raise ConfigurationError(f'agentool {name!r}: operation_map is empty', agentool=name)
    producible = _operation_values(field_info.annotation)
    if producible is not None:
        if missing := [op for op in producible if op not in routes]:
            raise ConfigurationError(
                f'agentool {name!r}: operation {missing[0]!r} of {input_schema.__name__}.'
                f'{operation_field} has no route in operation_map',
                agentool=name,
                operation=missing[0],
            )
        if extra := [op for op in routes if op not in producible]:
            raise ConfigurationError(
                f'agentool {name!r}: operation_map routes {extra[0]!r}, which '
                f'{input_schema.__name__}.{operation_field} cannot produce '
                f'(allowed: {", ".join(map(repr, producible))})',
                agentool=name,
                operation=extra[0],
            )
    compiled: dict[str, CompiledRoute] = {}
    for operation, route in routes.items():
        function = tools.get(route.tool)
        if function is None:
            raise ConfigurationError(
                f'agentool {name!r}: operation {operation!r} routes to tool {route.tool!r}, '
                f'which is not among the tools given ({", ".join(map(repr, tools)) or "none"})',
                agentool=name,
                operation=operation,
                tool=route.tool,
            )
        signature = read_signature(function)
        matched: tuple[str, ...] = ()
        if route.transform is None:
            fields = input_schema.model_fields
            matched = tuple(p for p in signature.params if p in fields)
            if unfilled := sorted(signature.required - set(matched)):
                raise ConfigurationError(
                    f'agentool {name!r}: operation {operation!r} has no transform, and tool '
                    f'{route.tool!r} requires parameter {unfilled[0]!r}, which is not a field of '
                    f'{input_schema.__name__}; add the field or give the route a transform',
                    agentool=name,
                    operation=operation,
                    tool=route.tool,
                    parameter=unfilled[0],
                )
        always = tuple(field for field in matched if field in signature.required)
        if_set = tuple(field for field in matched if field not in signature.required)
        positional = _positional_reader(signature, always) if route.transform is None and not if_set else None
        compiled[operation] = CompiledRoute(
            operation, signature, route.transform, matched, always, if_set, frozenset(signature.params), positional
        )
    return compiled


def _positional_reader(signature: ToolSignature, fields: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]] | None:
    """A reader of `fields` as positional arguments, if they are exactly the tool's leading positional parameters."""
    parameters = list(inspect.signature(signature.function).parameters.values())[int(signature.takes_ctx) :]
    leading = parameters[: len(fields)]
    if tuple(p.name for p in leading) != fields or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in leading):
        return None
    if len(fields) >= 2:
        return operator.attrgetter(*fields)  # returns the tuple of values
    if len(fields) == 1:
        (name,) = fields
        return lambda input: (getattr(input, name),)
    return _no_arguments


def _no_arguments(input: Any) -> tuple[Any, ...]:
    return ()


def _operation_values(annotation: Any) -> list[str] | None:
    """The operation values a field annotation allows, or `None` when it allows any string."""
    if get_origin(annotation) is Literal:
        return [str(v) for v in get_args(annotation)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return None
