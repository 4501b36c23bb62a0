"""The typed errors for input an agentool refuses: not an object, no such operation, invalid fields."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from ...errors import (
    InputValidationError,
    InvalidJSONError,
    NotAnObjectError,
    UnknownOperationError,
    clip,
    did_you_mean,
    quote,
    suggest,
)
from ._json import json_type, loc

__all__ = ('invalid_input', 'invalid_json', 'not_an_object', 'unknown_operation', 'unparsable_json')

_AT = re.compile(r'at line (\d+) column (\d+)$')


def invalid_json(agentool: str, bad: json.JSONDecodeError) -> InvalidJSONError:
    return InvalidJSONError(
        f'input to agentool {agentool!r} is not valid JSON: {bad.msg} at line {bad.lineno} column {bad.colno} '
        f'(char {bad.pos})',
        agentool=agentool,
        position=bad.pos,
        line=bad.lineno,
        column=bad.colno,
    )


def not_an_object(agentool: str, operation_field: str, value: Any) -> NotAnObjectError:
    kind = json_type(value)
    return NotAnObjectError(
        f'input to agentool {agentool!r} must be a JSON object with an {operation_field!r} field, got {kind}',
        agentool=agentool,
        json_type=kind,
    )


def invalid_input(agentool: str, operation: str | None, errors: list[dict[str, Any]]) -> InputValidationError:
    """The error listing every failing field (pydantic-style `errors`; the message names the first ten)."""
    where = '' if operation is None else f' operation {operation!r}'
    problems = '; '.join(f'field {quote(loc(e["loc"]))}: {clip(e["msg"], 300)}' for e in errors[:10])
    more = f' (and {len(errors) - 10} more)' if len(errors) > 10 else ''
    return InputValidationError(
        f'invalid input for agentool {agentool!r}{where}: {problems}{more}',
        agentool=agentool,
        operation=operation,
        errors=errors,
    )


def unknown_operation(agentool: str, operation: Any, known: list[str]) -> UnknownOperationError:
    """The error for an operation with no route, listing the `known` ones and suggesting close ones."""
    suggestions = suggest(operation, known) if isinstance(operation, str) else []
    return UnknownOperationError(
        f'agentool {agentool!r} has no operation {quote(operation)}; '
        f'known operations: {", ".join(map(repr, known))}{did_you_mean(suggestions)}',
        agentool=agentool,
        operation=operation,
        known=known,
        suggestions=suggestions,
    )


def unparsable_json(agentool: str, data: str | bytes, error: ValidationError, cause: Exception) -> InvalidJSONError:
    """The error for JSON the standard library cannot read either (too deep, a huge integer, not UTF-8),
    with `position`, `line` and `column` from pydantic's message, as for any other invalid JSON."""
    reason = str(error.errors(include_url=False)[0]['msg']) if error.error_count() else str(cause)
    found = _AT.search(reason)
    if found is None:
        return InvalidJSONError(
            f'input to agentool {agentool!r} could not be parsed as JSON: {quote(str(cause), 300)}', agentool=agentool
        )
    line, column = int(found[1]), int(found[2])
    # pydantic counts the column in UTF-8 bytes; text input gets it in characters, as `json` gives it.
    raw = data if isinstance(data, bytes) else data.encode()
    start = sum(len(row) + 1 for row in raw.split(b'\n', line - 1)[: line - 1])  # where line `line` starts
    position = start + column - 1
    if isinstance(data, str):
        column = len(raw[start:position].decode(errors='ignore')) + 1
        position = len(raw[:position].decode(errors='ignore'))
    return InvalidJSONError(
        f'input to agentool {agentool!r} is not valid JSON: {reason[: found.start()].removeprefix("Invalid JSON: ")}'
        f'at line {line} column {column} (char {position})',
        agentool=agentool,
        position=position,
        line=line,
        column=column,
    )
