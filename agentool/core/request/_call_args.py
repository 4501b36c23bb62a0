"""The arguments of the manager tool call a deterministic run makes: the prompt text, as a rule.

pydantic-ai validates a tool whose one argument is a model in Python mode, even from JSON text,
and there a *strict* field (`Field(strict=True)`, or a strict model) refuses the JSON form of its
value (a `datetime` or `UUID` as a string), which `injector.call` and the agentool's own
validation accept. For an input schema with strict fields the call therefore carries the validated
input as Python values instead, which validate in both modes; any other schema keeps the text.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from pydantic import BaseModel

__all__ = ('MANAGER_TOOL_NAME', 'call_args', 'operation_name')

MANAGER_TOOL_NAME = '__agentool_manager__'
"""Name of the tool whose argument schema is the agentool's input schema."""


def call_args(prompt: str, validated: BaseModel) -> str | dict[str, Any]:
    """The manager tool call's arguments for `prompt`, already validated as `validated`."""
    keys = _python_keys(type(validated))
    if keys is None:
        return prompt
    # The fields the caller gave (defaults are filled in again), as the validated values themselves:
    # no serialisation, so secrets, excluded fields and nested models arrive as they are.
    return {keys[name]: getattr(validated, name) for name in validated.model_fields_set if name in keys}


@functools.cache
def _python_keys(schema: type[BaseModel]) -> dict[str, str] | None:
    """Field name -> input key when `schema` needs Python arguments (it has a strict field), else `None`.

    Also `None` when a field is read from several keys or a path, or holds JSON text (`Json[...]`):
    their values cannot be given back under one key as they were validated; such schemas keep the text.
    """
    if not _strict_in(schema.__pydantic_core_schema__):
        return None
    keys: dict[str, str] = {}
    for name, field in schema.model_fields.items():
        alias = field.validation_alias if field.validation_alias is not None else field.alias
        json_text = any(type(marker).__name__ == 'Json' for marker in field.metadata)
        if json_text or (alias is not None and not isinstance(alias, str)):
            return None
        keys[name] = alias or name
    return keys


def _strict_in(node: object) -> bool:
    """Whether a core schema validates something strictly in lax (Python) mode."""
    if isinstance(node, dict):
        items = cast('dict[str, Any]', node)
        if items.get('strict') is True:
            return True
        if items.get('type') == 'lax-or-strict':  # its strict branch applies only in strict mode
            return _strict_in(items.get('lax_schema'))
        return any(_strict_in(value) for value in items.values())
    if isinstance(node, list | tuple):
        return any(_strict_in(value) for value in cast('list[Any]', node))
    return False


def operation_name(operation: Any) -> str:
    """The operation an input's operation field names: a string as it is, an Enum member by its value."""
    return operation if type(operation) is str else str(getattr(operation, 'value', operation))
