"""An agentool's input as JSON text (`serialize_input`, used by every surface taking Python
values), and the architecture guide's two JSON helpers for code that builds the prompt itself."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import date, datetime, time
from pathlib import PurePath
from typing import Any, NoReturn, cast

from pydantic import BaseModel, Secret, SecretBytes, SecretStr
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from ...errors import InvalidInputError, InvalidJSONError

__all__ = ('serialize_input', 'serialize_fallback', 'serialize_to_json_string', 'validate_json_string')


def validate_json_string(data: str | bytes) -> bool:
    """Whether `data` is one well-formed JSON value (RFC 8259: `NaN` and `Infinity` are not JSON)."""
    try:
        json.loads(data, parse_constant=_no_constant)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def _no_constant(name: str) -> NoReturn:
    # `json` reads `NaN`, `Infinity` and `-Infinity` by default; JSON has no such numbers.
    raise ValueError(f'{name} is not JSON')


def serialize_to_json_string(data: Any) -> str:
    """`data` as RFC 8259 JSON text, as the architecture guide's helper writes it: a JSON string
    unchanged, any other string quoted, a model by alias, datetimes in ISO 8601. A value JSON cannot
    represent raises `InvalidInputError` (`details['reason']`), never silently stringified.
    """
    if isinstance(data, str):
        return data if validate_json_string(data) else json.dumps(data)
    if isinstance(data, datetime | date | time):
        return json.dumps(data.isoformat())  # the guide's ISO form (pydantic writes UTC as 'Z')
    try:
        if isinstance(data, BaseModel):
            text = data.model_dump_json(by_alias=True)
        else:
            text = json.dumps(to_jsonable_python(data, by_alias=True, fallback=serialize_fallback))
    except (PydanticSerializationError, TypeError, ValueError) as error:
        raise _refused(data, str(error), 'not_serialisable') from None
    # `json.dumps` (and a model configured to) writes a non-finite float as `NaN` or `Infinity`.
    if not validate_json_string(text):
        raise _refused(data, 'it holds an infinite or NaN number, which JSON has no number for', 'non_finite_number')
    return text


def _refused(data: Any, why: str, reason: str) -> InvalidInputError:
    kind = type(data).__name__
    return InvalidInputError(f'Cannot serialize a value of type {kind} to JSON: {why}', python_type=kind, reason=reason)


def serialize_input(agentool: str, input: Any) -> str | bytes:
    """`input` as JSON text: strings and UTF-8 bytes are JSON already, anything else goes through
    pydantic's serialiser, which keeps datetimes, `Decimal`, `UUID`, enums, sets and models faithful."""
    if isinstance(input, str):
        return input
    if isinstance(input, bytes | bytearray):
        try:
            return bytes(input).decode()
        except UnicodeDecodeError as error:
            line = input.count(b'\n', 0, error.start) + 1
            column = error.start - (input.rfind(b'\n', 0, error.start) + 1) + 1
            raise InvalidJSONError(
                f'input to agentool {agentool!r} is not valid UTF-8 at line {line} column {column} '
                f'(byte {error.start})',
                agentool=agentool,
                position=error.start,
                line=line,
                column=column,
            ) from None
    try:
        if isinstance(input, BaseModel):
            # Top-level fields left at a plain default are not sent: sent, they would count as given
            # (an operation refuses fields it does not use). `default_factory` values (ids) are sent.
            given = input.model_fields_set
            unset = {n for n, f in type(input).model_fields.items() if n not in given and f.default_factory is None}
            # `round_trip`: what reads back as the same value (a `Json[...]` field as its JSON text).
            options: dict[str, Any] = {'by_alias': True, 'round_trip': True, 'exclude': unset or None}
            text = input.model_dump_json(**options, fallback=serialize_fallback)
            if _MASK in text:  # pydantic writes every secret masked: the tool gets the value the caller gave
                return to_json(_reveal(input.model_dump(**options)), fallback=serialize_fallback)
            return text
        return to_json(input, by_alias=True, fallback=serialize_fallback)
    except PydanticSerializationError as error:
        raise InvalidInputError(
            f'input to agentool {agentool!r} of type {type(input).__name__} cannot be serialised to JSON: {error}',
            agentool=agentool,
            python_type=type(input).__name__,
        ) from None


_MASK = '**********'
"""How pydantic writes a secret (`SecretStr`, `SecretBytes`, `Secret[...]`) in JSON, whatever its value."""


def _reveal(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reveal(item) for key, item in cast('dict[Any, Any]', value).items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_reveal(item) for item in cast('Iterable[Any]', value)]
    if isinstance(value, Secret | SecretStr | SecretBytes):
        secret: object = cast('Secret[Any] | SecretStr | SecretBytes', value).get_secret_value()
        return secret
    return value


def serialize_fallback(value: Any) -> Any:
    """What pydantic cannot serialise itself: pure paths as text; anything else is refused."""
    # pydantic serialises concrete `Path`s but not pure paths; both are text in JSON.
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f'unable to serialise unknown type {type(value).__name__}')
