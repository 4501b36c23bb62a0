"""What agentool reads from a tool function: its metadata, and the output type its routes imply."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Union, get_origin

from pydantic import BaseModel

from ._option_checks import check_instances
from ._signature import read_signature, type_name
from .config import ToolMetadata

__all__ = ('extract_tool_metadata', 'infer_output_type', 'docstring_summary')


def docstring_summary(docstring: str | None) -> str | None:
    """The summary of a docstring: its first paragraph, on one line."""
    if not docstring:
        return None
    return ' '.join(docstring.strip().split('\n\n', 1)[0].split())


def extract_tool_metadata(tool: Callable[..., Any]) -> ToolMetadata:
    """Describe a tool function: name, docstring summary (and full text), async-ness, parameters, return type."""
    signature = read_signature(tool)
    return_annotation = signature.hints.get('return', inspect.Signature.empty)
    has_return = return_annotation is not inspect.Signature.empty
    docstring = inspect.getdoc(tool)
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
        ConfigurationError: `tools_metadata` is not a list of `ToolMetadata` (`extract_tool_metadata` gives them).
    """
    distinct: dict[str, Any] = {}
    for meta in check_instances('tools_metadata', tools_metadata, ToolMetadata):
        annotation = meta.return_type_annotation
        if annotation is None or annotation is Any:
            return None
        distinct.setdefault(repr(annotation), annotation)
    if not distinct:
        return None
    members = [distinct[key] for key in sorted(distinct)]
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    if len(models) == 1 and all(m is models[0] or m is dict or get_origin(m) is dict for m in members):
        return models[0]
    return members[0] if len(members) == 1 else Union[tuple(members)]  # noqa: UP007
