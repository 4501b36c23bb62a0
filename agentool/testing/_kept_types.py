"""Values JSON writes as text or a list but the live run had as another type (a `datetime`, bytes,
a tuple...), noted by JSON pointer (RFC 6901) when recording and restored on replay. A set is noted
only when rebuilt it iterates in the written order (numbers): it reaches the model's next request.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import uuid
from collections.abc import Callable, Mapping
from typing import Any, cast

from pydantic import TypeAdapter

_KINDS: dict[str, type] = {
    'datetime': datetime.datetime,
    'date': datetime.date,
    'time': datetime.time,
    'timedelta': datetime.timedelta,
    'Decimal': decimal.Decimal,
    'UUID': uuid.UUID,
}
_NAMES = {kind: name for name, kind in _KINDS.items()}
_COLLECTIONS: dict[type, str] = {tuple: 'tuple', set: 'set', frozenset: 'frozenset'}
"""Collections JSON writes as lists, by type (exactly: a named tuple is a class, not a `tuple`)."""
_BY_NAME = {name: kind for kind, name in _COLLECTIONS.items()}
_ADAPTERS: dict[str, TypeAdapter[Any]] = {name: TypeAdapter(kind) for name, kind in _KINDS.items()}


def lost_types(live: object, read_back: object, prefix: str) -> dict[str, str]:
    """Pointers (under `prefix`) to values of `live` that its JSON form `read_back` has as text or a list."""
    found: dict[str, str] = {}
    _walk(live, read_back, prefix, found)
    return found


def _walk(live: object, again: object, pointer: str, found: dict[str, str]) -> None:
    if isinstance(live, Mapping) and isinstance(again, Mapping):
        live_map, again_map = cast('Mapping[object, object]', live), cast('Mapping[object, object]', again)
        for key, value in live_map.items():
            if isinstance(key, str) and key in again_map:
                _walk(value, again_map[key], f'{pointer}/{_escape(key)}', found)
    elif isinstance(live, list | tuple | set | frozenset) and isinstance(again, list | tuple):
        kind: type = type(cast(object, live))
        collection = _COLLECTIONS.get(kind) if type(cast(object, again)) is list else None
        if collection == 'tuple' or (collection is not None and _keeps_order(cast('list[object]', again))):
            found[pointer] = collection
        items = cast('list[object] | tuple[object, ...] | set[object] | frozenset[object]', live)
        pairs = zip(items, cast('list[object]', again), strict=False)
        for index, (value, other) in enumerate(pairs):
            _walk(value, other, f'{pointer}/{index}', found)
    elif isinstance(again, str) and isinstance(live, bytes):
        found[pointer] = 'bytes' if live.decode('utf-8', errors='replace') == again else 'base64'
    elif isinstance(again, str) and not isinstance(live, str):
        value = cast(object, live)
        name = _NAMES.get(type(value)) or next((n for k, n in _NAMES.items() if isinstance(value, k)), None)
        if name is not None:
            found[pointer] = name


def _keeps_order(items: list[object]) -> bool:
    """Whether a set rebuilt from `items` iterates in their order in every process (numbers only)."""
    numbers = all(isinstance(item, int | float) for item in items)
    return numbers and list(set(cast('list[int | float]', items))) == items


def restored(data: Any, types: Mapping[str, str], prefix: str) -> Any:
    """A copy of `data` (the JSON at `prefix`) with each value `types` names turned back into its type;
    what does not parse or leads nowhere (a redaction hook rewrote it) stays as written."""
    # The deepest first: a tuple of datetimes gets its datetimes before it becomes a tuple.
    pointers = [p for p in types if p.startswith(f'{prefix}/') or p == prefix]
    for pointer in sorted(pointers, key=lambda p: p.count('/'), reverse=True):
        name = types[pointer]
        if name in _KINDS or name in _BY_NAME or name in ('bytes', 'base64'):
            rest = pointer[len(prefix) + 1 :]
            steps = [_unescape(step) for step in rest.split('/')] if pointer != prefix else []
            data = _replaced(data, steps, lambda value, name=name: _parsed(value, name))
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


def _parsed(value: Any, name: str) -> Any:
    try:
        if name in _BY_NAME:
            # A set of unhashable items is a TypeError: kept as a list.
            return _BY_NAME[name](cast('list[Any]', value)) if isinstance(value, list) else value
        if not isinstance(value, str):
            return value
        if name == 'bytes':
            return value.encode('utf-8')
        if name == 'base64':
            return base64.b64decode(value, altchars=b'-_', validate=True)  # pydantic writes the URL-safe alphabet
        return _ADAPTERS[name].validate_python(value)
    except (TypeError, ValueError):  # binascii's and pydantic's errors are ValueErrors
        return cast(Any, value)


def _escape(key: str) -> str:
    return key.replace('~', '~0').replace('/', '~1')


def _unescape(step: str) -> str:
    return step.replace('~1', '/').replace('~0', '~')
