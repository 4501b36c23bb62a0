"""JSON text from the Python values the architecture guide lists, for prompts built by hand.

`injector.run` already accepts a dict, a model or JSON text directly; these two helpers are the
guide's names for the same conversion, for code that builds the prompt itself.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time
from typing import Any, NoReturn

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ...errors import InvalidInputError
from ._targets import serialise_fallback

__all__ = ('serialize_to_json_string', 'validate_json_string')


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
    """`data` as JSON text, as the architecture guide's helper writes it.

    A string that is JSON already comes back unchanged, any other string becomes a JSON string; a
    pydantic model is its `model_dump_json()` (by alias); dicts, lists, tuples, numbers, booleans
    and `None` are `json.dumps` text (`{"a": 1}`); datetimes, dates and times become ISO 8601
    strings and `Decimal`s exact decimal strings (also when nested, nested models by alias). The
    text is always RFC 8259 JSON: an infinite or NaN float, which JSON has no number for, is refused.

    Raises:
        InvalidInputError: "Cannot serialize ..." for a value JSON cannot represent (it is never
            silently stringified), `details['reason']` `'not_serialisable'`, or for an infinite or
            NaN number, `'non_finite_number'`; also a `ValueError`.
    """
    if isinstance(data, str):
        return data if validate_json_string(data) else json.dumps(data)
    if isinstance(data, datetime | date | time):
        return json.dumps(data.isoformat())  # the guide's ISO form (pydantic writes UTC as 'Z')
    try:
        if isinstance(data, BaseModel):
            text = data.model_dump_json(by_alias=True)
        else:
            text = json.dumps(to_jsonable_python(data, by_alias=True, fallback=serialise_fallback))
    except (PydanticSerializationError, TypeError, ValueError) as error:
        raise _refused(data, str(error), 'not_serialisable') from None
    # `json.dumps` writes a non-finite float as `NaN` or `Infinity`, and so does a model configured to
    # (by default it writes `null`): reading the text back strictly finds them.
    if not validate_json_string(text):
        raise _refused(data, 'it holds an infinite or NaN number, which JSON has no number for', 'non_finite_number')
    return text


def _refused(data: Any, why: str, reason: str) -> InvalidInputError:
    kind = type(data).__name__
    return InvalidInputError(f'Cannot serialize a value of type {kind} to JSON: {why}', python_type=kind, reason=reason)
