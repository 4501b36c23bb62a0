"""What value an agent's output spec stands for: `NativeOutput(M)`, `[M, str]`, `ToolOutput(M)` all mean `M`s.

pydantic-ai takes marker objects and lists as an agent's `output_type`; a tool's result is checked
against the plain types inside them. Read from the markers' public fields (`outputs`, `output`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any, Union, cast, get_origin

from pydantic_ai import NativeOutput, PromptedOutput, TextOutput, ToolOutput

from ...errors import ConfigurationError

__all__ = ('check_output_type', 'is_output_spec', 'output_types', 'output_value_type')

_TYPING_MODULES = frozenset({'typing', 'typing_extensions', 'types'})
"""Where the classes of typing forms live (`Any`, `Literal[...]`, `A | B`, a `TypeVar`, a `NewType`)."""


def output_types(spec: Any) -> list[Any] | None:
    """The plain types `spec` accepts, markers and lists unwrapped; `None` when a member is an output
    function (`TextOutput`, a callable), whose result only pydantic-ai's own output stage can tell."""
    if isinstance(spec, ToolOutput):
        return output_types(cast(Any, spec).output)
    if isinstance(spec, NativeOutput | PromptedOutput):
        return output_types(cast(Any, spec).outputs)
    if isinstance(spec, TextOutput):
        return None
    if isinstance(spec, Sequence) and not isinstance(spec, str):
        found: list[Any] = []
        for item in cast(Sequence[Any], spec):
            types = output_types(item)
            if types is None:
                return None
            found.extend(types)
        return found
    if inspect.isroutine(spec) or isinstance(spec, functools.partial):
        return None  # an output function (a `NewType` or an alias is callable too, but a type)
    return [spec]


def output_value_type(spec: Any) -> Any:
    """One type for the values `spec` accepts (a `Union` of several), or `None` when it cannot be told."""
    types = output_types(spec)
    if types is None:
        return None
    if len(types) == 1:
        return types[0]
    union: Any = Union
    return union[tuple(types)]


def is_output_spec(spec: object) -> bool:
    """Whether `spec` can be an agent's `output_type`, told cheaply: no schema is built.

    `None`, a class, a typing form (`list[int]`, `A | B`, `Literal['a']`, `Any`), a pydantic-ai
    output marker or output function, or a non-empty list of these. What this lets through but
    pydantic cannot describe (a plain class) is refused when the agent is built.
    """
    if spec is None or isinstance(spec, type | ToolOutput | NativeOutput | PromptedOutput | TextOutput):
        return True
    if isinstance(spec, Sequence) and not isinstance(spec, str | bytes):
        items = list(cast('Sequence[object]', spec))
        return bool(items) and all(is_output_spec(item) for item in items)
    if inspect.isroutine(spec) or isinstance(spec, functools.partial):
        return True
    return get_origin(spec) is not None or type(spec).__module__ in _TYPING_MODULES


def check_output_type(output_type: object, *, agentool: str | None = None) -> None:
    """Raise `ConfigurationError` unless `output_type` can be an output type (cheaply told: see `is_output_spec`)."""
    if not is_output_spec(output_type):
        raise ConfigurationError(
            'output_type must be a type or typing form pydantic can describe (a class, list[int], A | B, ...), '
            f'a pydantic-ai output spec or None; got {output_type!r}',
            agentool=agentool,
            option='output_type',
            value=repr(output_type),
        )
