"""What agentool reads from a tool function: its metadata, and the output type its routes imply."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from ..._options import check_instances
from ...errors import ConfigurationError
from ._signature import RESOLVE_HINT, read_signature, type_name
from .config import ToolMetadata

__all__ = ('extract_tool_metadata', 'infer_output_type', 'docstring_summary')


def docstring_summary(docstring: str | None) -> str | None:
    """The summary of a docstring: its first paragraph, on one line."""
    if not docstring:
        return None
    return ' '.join(docstring.strip().split('\n\n', 1)[0].split())


def extract_tool_metadata(tool: Callable[..., Any]) -> ToolMetadata:
    """Describe a tool function: name, docstring summary (and full text), async-ness, parameters, return type.

    A `functools.partial` is described as its function, less the arguments it binds positionally
    (those bound by keyword stay, with the bound value as their default).

    Raises:
        ConfigurationError: `tool` is not a function (or a partial of one), or its first parameter's
            annotation looks like a `RunContext` but cannot be resolved.
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

    One distinct type gives that type; one pydantic model alongside `dict` annotations gives the
    model (a dict result is validated into it, as the guide's "dict/BaseModel compatibility");
    otherwise several give their union in a fixed order (so tool order never matters). A tool
    without a return annotation, or annotated `Any`, makes the output untyped (`None`: the run's
    output is JSON text).

    Raises:
        ConfigurationError: `tools_metadata` is not a list of `ToolMetadata` (`extract_tool_metadata` gives
            them), or a return annotation could not be resolved (it is text: `'Later'`).
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
