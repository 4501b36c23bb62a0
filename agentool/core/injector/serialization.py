"""JSON text from the Python values the architecture guide lists, for prompts built by hand.

`injector.run` already accepts a dict, a model or JSON text directly; these two helpers are the
guide's names for the same conversion, for code that builds the prompt itself.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ...errors import InvalidInputError
from ._targets import serialise_fallback

__all__ = ('serialize_to_json_string', 'validate_json_string')


def validate_json_string(data: str | bytes) -> bool:
    """Whether `data` is one well-formed JSON value."""
    try:
        json.loads(data)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


def serialize_to_json_string(data: Any) -> str:
    """`data` as JSON text, as the architecture guide's helper writes it.

    A string that is JSON already comes back unchanged, any other string becomes a JSON string; a
    pydantic model is its `model_dump_json()` (by alias); dicts, lists, tuples, numbers, booleans
    and `None` are `json.dumps` text (`{"a": 1}`); datetimes, dates and times become ISO 8601
    strings and `Decimal`s exact decimal strings (also when nested, nested models by alias).

    Raises:
        InvalidInputError: "Cannot serialize ..." for a value JSON cannot represent (it is never
            silently stringified); also a `ValueError`.
    """
    if isinstance(data, str):
        return data if validate_json_string(data) else json.dumps(data)
    if isinstance(data, datetime | date | time):
        return json.dumps(data.isoformat())  # the guide's ISO form (pydantic writes UTC as 'Z')
    try:
        if isinstance(data, BaseModel):
            return data.model_dump_json(by_alias=True)
        return json.dumps(to_jsonable_python(data, by_alias=True, fallback=serialise_fallback))
    except (PydanticSerializationError, TypeError, ValueError) as error:
        raise InvalidInputError(
            f'Cannot serialize a value of type {type(data).__name__} to JSON: {error}',
            python_type=type(data).__name__,
        ) from None
