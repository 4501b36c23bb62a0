"""Reading tool functions once, at creation: their signatures (so the call path does no introspection),
their catalog metadata, and the output type their return annotations imply."""

from __future__ import annotations

import functools
import inspect
import types
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from types import FunctionType, SimpleNamespace
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from pydantic.errors import PydanticUndefinedAnnotation, PydanticUserError
from pydantic_ai import RunContext

from ..._options import check_instances
from ...errors import ConfigurationError
from .config import ToolMetadata

__all__ = (
    'ToolSignature',
    'read_signature',
    'tool_name',
    'type_name',
    'UNRESOLVABLE',
    'UNREADABLE',
    'extract_tool_metadata',
    'infer_output_type',
    'docstring_summary',
)

RESOLVE_HINT = 'define the names it uses at module level (not inside a function, nor only under `if TYPE_CHECKING:`)'

UNRESOLVABLE: tuple[type[Exception], ...] = (NameError, AttributeError, TypeError, SyntaxError)
"""What `get_type_hints` raises for an annotation it cannot resolve; anything else propagates."""

UNREADABLE: tuple[type[Exception], ...] = (PydanticUserError, PydanticUndefinedAnnotation)
"""What pydantic raises for a type it cannot build a schema for."""


@dataclass(frozen=True)
class ToolSignature:
    """The facts about a tool function that routing needs."""

    name: str
    function: Callable[..., Any]
    is_async: bool
    takes_ctx: bool
    params: tuple[str, ...]
    """Keyword-passable parameter names, the context excluded."""
    required: frozenset[str]
    accepts_var_kwargs: bool
    hints: dict[str, Any]
    """Parameter (and `'return'`) → its annotation, resolved; one that cannot be is kept as written."""

    @property
    def docstring(self) -> str | None:
        """The tool's docstring, cleaned (`inspect.getdoc`); a partial's is its function's."""
        return inspect.getdoc(_unwrap(self.function))


def _unwrap(function: object) -> object:
    while isinstance(function, functools.partial):
        function = cast('functools.partial[Any]', function).func
    return function


def _is_async(function: object) -> bool:
    """Whether calling `function` gives a coroutine (also an object whose `__call__` is a coroutine function)."""
    if inspect.iscoroutinefunction(function):
        return True
    target = _unwrap(function)
    call = None if inspect.isroutine(target) else inspect.getattr_static(type(target), '__call__', None)
    return call is not None and inspect.iscoroutinefunction(call)


def tool_name(function: object) -> str | None:
    """The name routes find a tool by: its `__name__` (a partial's function's); `None` if it has none."""
    name = getattr(_unwrap(function), '__name__', None)
    return name if isinstance(name, str) else None


def _hints(function: object) -> tuple[dict[str, Any], dict[str, str]]:
    """The annotations of `function`, resolved (else kept as written), and why any could not be."""
    try:
        return get_type_hints(function), {}
    except UNRESOLVABLE:  # some annotation cannot be resolved: resolve each alone, to tell which
        pass
    written: dict[str, Any] = dict(getattr(function, '__annotations__', None) or {})
    namespace = getattr(inspect.unwrap(cast('Callable[..., Any]', function)), '__globals__', {})
    hints: dict[str, Any] = {}
    unresolved: dict[str, str] = {}
    for key, annotation in written.items():
        try:  # `get_type_hints` of an object holding this one annotation: the same resolution, by public API
            hints[key] = get_type_hints(SimpleNamespace(__annotations__={key: annotation}), namespace)[key]
        except UNRESOLVABLE as error:
            hints[key] = annotation
            unresolved[key] = f'{type(error).__name__}: {error}'
    return hints, unresolved


_read: weakref.WeakKeyDictionary[Callable[..., Any], tuple[tuple[object, ...], ToolSignature]] = (
    weakref.WeakKeyDictionary()
)


def read_signature(function: Callable[..., Any]) -> ToolSignature:
    """Inspect `function` once: its context parameter, its keyword parameters and which are required."""
    if type(function) is not FunctionType:  # bound methods, partials, callables: a new object each time
        return _read_signature(function)
    # What `inspect.signature` and `get_type_hints` read: replacing any of them reads the function again.
    declared = getattr(function, '__signature__', None)
    reads = (function.__code__, function.__defaults__, function.__kwdefaults__, function.__annotations__, declared)
    cached = _read.get(function)
    if cached is not None and all(a is b for a, b in zip(cached[0], reads, strict=True)):
        return cached[1]
    signature = _read_signature(function)
    _read[function] = (reads, signature)
    return signature


def _read_signature(function: Callable[..., Any]) -> ToolSignature:
    name = tool_name(function)
    if name is None or not callable(function):
        raise ConfigurationError(
            f'a tool must be a function (or a functools.partial of one), whose __name__ routes use; got {function!r}',
            option='tools',
            value=repr(function),
        )
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as error:  # a builtin without a signature, say
        raise ConfigurationError(
            f'tool {name!r}: its signature cannot be read: {error}', tool=name, reason=str(error)
        ) from None
    hints, unresolved = _hints(_unwrap(function))  # a partial's parameters keep its function's annotations
    parameters = list(signature.parameters.values())
    takes_ctx = False
    if parameters:
        first = parameters[0]
        hint, reason = hints.get(first.name), unresolved.get(first.name)
        if reason and isinstance(hint, str) and ('RunContext' in hint or first.name == 'ctx'):
            # It looks like the run context but cannot be resolved: taken for an input field, it would
            # fail with a misleading "requires parameter 'ctx'".
            raise ConfigurationError(
                f'tool {name!r}: the annotation {hint!r} of its first parameter {first.name!r} cannot be resolved '
                f'({reason}), so it cannot be told to be the run context; {RESOLVE_HINT}',
                tool=name,
                parameter=first.name,
                annotation=hint,
                reason=reason,
            )
        takes_ctx = hint is RunContext or get_origin(hint) is RunContext or (hint is None and first.name == 'ctx')
    if takes_ctx:
        parameters = parameters[1:]
    keyword = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return ToolSignature(
        name=name,
        function=function,
        is_async=_is_async(function),
        takes_ctx=takes_ctx,
        params=tuple(p.name for p in keyword),
        required=frozenset(p.name for p in keyword if p.default is p.empty),
        accepts_var_kwargs=any(p.kind is p.VAR_KEYWORD for p in parameters),
        hints=hints,
    )


def type_name(annotation: Any) -> str:
    """A short, readable name for a type annotation (`Note | None`), as metadata, catalogs and errors spell it."""
    if isinstance(annotation, str):  # a forward reference that could not be resolved
        return annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_name(args[0])
    if origin in (Union, types.UnionType):
        return ' | '.join(type_name(arg) for arg in args)
    if origin is Literal:
        return f'Literal[{", ".join(repr(arg) for arg in args)}]'
    if origin is not None and args:
        return f'{type_name(origin)}[{", ".join(type_name(arg) for arg in args)}]'
    if annotation is None or annotation is types.NoneType:
        return 'None'
    if annotation is Ellipsis:
        return '...'
    if isinstance(annotation, list):  # the parameters of a `Callable`
        items: list[Any] = annotation  # pyright: ignore[reportUnknownVariableType]
        return f'[{", ".join(type_name(item) for item in items)}]'
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation).replace('typing.', '').replace('typing_extensions.', '')


def docstring_summary(docstring: str | None) -> str | None:
    """The summary of a docstring: its first paragraph, on one line."""
    if not docstring:
        return None
    return ' '.join(docstring.strip().split('\n\n', 1)[0].split())


def extract_tool_metadata(tool: Callable[..., Any]) -> ToolMetadata:
    """Describe a tool function: name, docstring summary (and full text), async-ness, parameters, return type.

    A `functools.partial` is described as its function, less the arguments it binds positionally.
    `ConfigurationError` when `tool` is no function (or partial of one), or an unresolvable `RunContext`.
    """
    signature = read_signature(tool)
    return_annotation = signature.hints.get('return', inspect.Signature.empty)
    if not signature.is_async and get_origin(return_annotation) in (Awaitable, Coroutine):
        # A function that returns an awaitable (a decorator that dropped `async`): its value is what it awaits to.
        return_annotation = get_args(return_annotation)[-1]
    has_return = return_annotation is not inspect.Signature.empty
    docstring = signature.docstring
    return ToolMetadata(
        name=signature.name,
        description=docstring_summary(docstring),
        docstring=docstring,
        is_async=signature.is_async,
        parameters=list(signature.params),
        parameter_types={p: type_name(signature.hints[p]) for p in signature.params if p in signature.hints},
        return_type=type_name(return_annotation) if has_return else None,
        return_type_annotation=return_annotation if has_return else None,
    )


def infer_output_type(tools_metadata: Sequence[ToolMetadata]) -> Any:
    """The output type common to `tools_metadata`'s return annotations, or `None` if there is none.

    One pydantic model alongside `dict` annotations gives the model; several types give their union
    in a fixed order. A tool without a return annotation, or annotated `Any`, makes the output untyped.
    An annotation that cannot be resolved raises `ConfigurationError`.
    """
    distinct: dict[str, Any] = {}
    for meta in check_instances('tools_metadata', tools_metadata, ToolMetadata):
        annotation = meta.return_type_annotation
        if annotation is None or annotation is Any:
            return None
        if isinstance(annotation, str):  # `extract_tool_metadata` keeps an annotation it cannot resolve as text
            raise ConfigurationError(
                f'tool {meta.name!r} returns {annotation!r}, an annotation that cannot be resolved, so no output '
                f'type can be inferred from it; {RESOLVE_HINT}, or give the output type',
                tool=meta.name,
                annotation=annotation,
            )
        distinct.setdefault(repr(annotation), annotation)
    if not distinct:
        return None
    members = [distinct[key] for key in sorted(distinct)]
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if len(models) == 1 and all(m is models[0] or m is dict or get_origin(m) is dict for m in members):
        return models[0]
    return members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007
