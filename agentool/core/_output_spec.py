"""What value an agent's output spec stands for: `NativeOutput(M)`, `[M, str]`, `ToolOutput(M)` all mean `M`s.

pydantic-ai takes marker objects and lists as an agent's `output_type`; a tool's result is checked
against the plain types inside them. Read from the markers' public fields (`outputs`, `output`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any, Union, cast

from pydantic_ai import NativeOutput, PromptedOutput, TextOutput, ToolOutput

__all__ = ('output_types', 'output_value_type')


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
