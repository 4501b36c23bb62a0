"""The arguments of the manager tool call a deterministic run makes: the prompt text, as a rule.

pydantic-ai validates the tool's model argument in Python mode, where a *strict* field refuses the
JSON form of its value (a `datetime` as a string); so an input schema with strict fields gets the
validated input as Python values, which validate in both modes.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from pydantic import BaseModel

__all__ = ('MANAGER_TOOL_NAME', 'call_args', 'operation_name')

MANAGER_TOOL_NAME = '__agentool_manager__'


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
    """Field name -> input key when `schema` has a strict field, else `None`; also `None` when a field's
    value cannot be given back under one key as validated (several keys, a path, `Json[...]`)."""
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
