"""Reading tool signatures once, at creation, so the call path does no introspection."""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import FunctionType
from typing import Any, get_origin, get_type_hints

from pydantic_ai import RunContext

__all__ = ('ToolSignature', 'read_signature', 'type_name')


@dataclass(frozen=True)
class ToolSignature:
    """The facts about a tool function that routing needs."""

    name: str
    function: Callable[..., Any]
    is_async: bool
    takes_ctx: bool
    params: tuple[str, ...]
    """Keyword-passable parameter names, excluding the context."""
    required: frozenset[str]
    accepts_var_kwargs: bool
    hints: dict[str, Any]


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return get_type_hints(function)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        return dict(getattr(function, '__annotations__', {}))


def _is_ctx(param: inspect.Parameter, hint: Any) -> bool:
    return hint is RunContext or get_origin(hint) is RunContext or (hint is None and param.name == 'ctx')


_read: weakref.WeakKeyDictionary[Callable[..., Any], tuple[tuple[object, ...], ToolSignature]] = (
    weakref.WeakKeyDictionary()
)
"""Signatures already read, per plain function: an agentool's catalog metadata and its routes read the
same tools (and tools are often shared), so each is read once and held once."""


def _what_it_reads(function: FunctionType) -> tuple[object, ...]:
    # What `inspect.signature` and `get_type_hints` read: replacing any of them reads the function again.
    signature = getattr(function, '__signature__', None)
    return (function.__code__, function.__defaults__, function.__kwdefaults__, function.__annotations__, signature)


def read_signature(function: Callable[..., Any]) -> ToolSignature:
    """Inspect `function` once: its context parameter, its keyword parameters and which are required."""
    if type(function) is not FunctionType:  # bound methods, partials, callables: a new object each time
        return _read_signature(function)
    reads = _what_it_reads(function)
    cached = _read.get(function)
    if cached is not None and all(a is b for a, b in zip(cached[0], reads, strict=True)):
        return cached[1]
    signature = _read_signature(function)
    _read[function] = (reads, signature)
    return signature


def _read_signature(function: Callable[..., Any]) -> ToolSignature:
    signature = inspect.signature(function)
    hints = _hints(function)
    parameters = list(signature.parameters.values())
    takes_ctx = bool(parameters) and _is_ctx(parameters[0], hints.get(parameters[0].name))
    if takes_ctx:
        parameters = parameters[1:]
    keyword = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return ToolSignature(
        name=function.__name__,
        function=function,
        is_async=inspect.iscoroutinefunction(function),
        takes_ctx=takes_ctx,
        params=tuple(p.name for p in keyword),
        required=frozenset(p.name for p in keyword if p.default is p.empty),
        accepts_var_kwargs=any(p.kind is p.VAR_KEYWORD for p in parameters),
        hints=hints,
    )


def type_name(annotation: Any) -> str:
    """A readable name for a type annotation (`int`, `list[str]`, `MyModel | None`), never quoted."""
    if isinstance(annotation, str):  # a forward reference that could not be resolved
        return annotation
    if isinstance(annotation, type) and get_origin(annotation) is None:
        return annotation.__name__
    return repr(annotation).replace('typing.', '')
