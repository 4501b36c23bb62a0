"""Values JSON writes as text but a live run had as another type, found when recording, restored on replay.

pydantic-ai serialises a `ModelResponse` field typed `Any` (`provider_details`, a builtin tool's
content) by its value: a `datetime` becomes an ISO string, and reading it back keeps the string.
A cassette therefore notes each such value by JSON pointer (RFC 6901) and type name, and replay
turns the text back into that type, so `provider_details['timestamp']` is a `datetime` on replay
as in the live run.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable, Mapping
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

__all__ = ('lost_types', 'restored')

_KINDS: dict[str, type] = {
    'datetime': datetime.datetime,
    'date': datetime.date,
    'time': datetime.time,
    'timedelta': datetime.timedelta,
    'Decimal': decimal.Decimal,
    'UUID': uuid.UUID,
}
_NAMES = {kind: name for name, kind in _KINDS.items()}
_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def lost_types(live: object, read_back: object, prefix: str) -> dict[str, str]:
    """Pointers (under `prefix`) to the values of `live` (python-mode data) that `read_back` (its JSON
    form validated and dumped in python mode again) has as text where `live` had a type of `_KINDS`."""
    found: dict[str, str] = {}
    _walk(live, read_back, prefix, found)
    return found


def _walk(live: object, again: object, pointer: str, found: dict[str, str]) -> None:
    if isinstance(live, Mapping) and isinstance(again, Mapping):
        live_map, again_map = cast('Mapping[object, object]', live), cast('Mapping[object, object]', again)
        for key, value in live_map.items():
            if isinstance(key, str) and key in again_map:
                _walk(value, again_map[key], f'{pointer}/{_escape(key)}', found)
    elif isinstance(live, list | tuple) and isinstance(again, list | tuple):
        pairs = zip(cast('list[object]', live), cast('list[object]', again), strict=False)
        for index, (value, other) in enumerate(pairs):
            _walk(value, other, f'{pointer}/{index}', found)
    elif isinstance(again, str) and not isinstance(live, str):
        value = cast(object, live)
        name = _NAMES.get(type(value)) or next((n for k, n in _NAMES.items() if isinstance(value, k)), None)
        if name is not None:
            found[pointer] = name


def restored(data: Any, types: Mapping[str, str], prefix: str) -> Any:
    """`data` (the JSON found at `prefix`) with each value `types` names under `prefix` turned back into
    its type; `data` itself is not changed. A pointer leading nowhere, an unknown type name or text
    that does not parse (a redaction hook rewrote it) leaves the value as written."""
    for pointer, name in types.items():
        if pointer.startswith(f'{prefix}/') and name in _KINDS:
            steps = [_unescape(step) for step in pointer[len(prefix) + 1 :].split('/')]
            data = _replaced(data, steps, lambda text, name=name: _parsed(text, name))
    return data


def _replaced(data: Any, steps: list[str], change: Callable[[Any], Any]) -> Any:
    if not steps:
        return change(data)
    step, rest = steps[0], steps[1:]
    if isinstance(data, dict):
        mapping = cast('dict[str, Any]', data)
        if step in mapping:
            return {**mapping, step: _replaced(mapping[step], rest, change)}
    elif isinstance(data, list):
        items: list[Any] = list(cast('list[Any]', data))
        if step.isdigit() and int(step) < len(items):
            items[int(step)] = _replaced(items[int(step)], rest, change)
            return items
    return cast(Any, data)


def _parsed(text: Any, name: str) -> Any:
    if not isinstance(text, str):
        return text
    adapter = _ADAPTERS.get(name)
    if adapter is None:
        adapter = _ADAPTERS[name] = TypeAdapter(_KINDS[name])
    try:
        return adapter.validate_python(text)
    except ValidationError:
        return text


def _escape(key: str) -> str:
    return key.replace('~', '~0').replace('/', '~1')


def _unescape(step: str) -> str:
    return step.replace('~1', '/').replace('~0', '~')
