"""The typed errors for input an agentool refuses: not an object, no such operation, invalid fields."""

from __future__ import annotations

from typing import Any

from ..errors import InputValidationError, NotAnObjectError, UnknownOperationError
from ._json import json_type, loc

__all__ = ('invalid_input', 'not_an_object', 'unknown_operation')


def not_an_object(agentool: str, operation_field: str, value: Any) -> NotAnObjectError:
    """The error for input that is valid JSON but not an object."""
    kind = json_type(value)
    return NotAnObjectError(
        f'input to agentool {agentool!r} must be a JSON object with an {operation_field!r} field, got {kind}',
        agentool=agentool,
        json_type=kind,
    )


def invalid_input(agentool: str, operation: str | None, errors: list[dict[str, Any]]) -> InputValidationError:
    """The error listing every failing field (pydantic-style `errors`; the message names the first ten)."""
    where = '' if operation is None else f' operation {operation!r}'
    problems = '; '.join(f'field {loc(e["loc"])!r}: {e["msg"]}' for e in errors[:10])
    more = f' (and {len(errors) - 10} more)' if len(errors) > 10 else ''
    return InputValidationError(
        f'invalid input for agentool {agentool!r}{where}: {problems}{more}',
        agentool=agentool,
        operation=operation,
        errors=errors,
    )


def unknown_operation(agentool: str, operation: Any, known: list[str]) -> UnknownOperationError:
    """The error for an operation with no route, listing the `known` ones."""
    return UnknownOperationError(
        f'agentool {agentool!r} has no operation {operation!r}; known operations: {", ".join(map(repr, known))}',
        agentool=agentool,
        operation=operation,
        known=known,
    )
