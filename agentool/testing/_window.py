"""Showing two long values around where they first differ, so both sides of a diff show the difference.

Cutting each side at a fixed length hides a change deep in a long message (both sides then print
the same prefix); this keeps the first difference in view on both sides, with a little context.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ('window', 'show_pair', 'as_text')

_ELLIPSIS = '...'


def as_text(value: Any) -> str:
    """`value` as compact, sorted JSON (a string as itself)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


def window(before: str, after: str, limit: int = 160) -> tuple[str, str]:
    """`before` and `after`, each cut to about `limit` characters around their first difference."""
    if len(before) <= limit and len(after) <= limit:
        return before, after
    first = 0
    shortest = min(len(before), len(after))
    while first < shortest and before[first] == after[first]:
        first += 1
    start = max(0, first - limit // 4)
    return _cut(before, start, limit), _cut(after, start, limit)


def _cut(text: str, start: int, limit: int) -> str:
    end = start + limit
    head = _ELLIPSIS if start > 0 else ''
    tail = _ELLIPSIS if end < len(text) else ''
    return f'{head}{text[start:end]}{tail}'


def show_pair(before: Any, after: Any, *, old: str = 'recorded', new: str = 'sent', limit: int = 160) -> str:
    """`<before> recorded, <after> sent` as JSON, both windowed around their first difference."""
    left, right = window(_json(before), _json(after), limit)
    return f'{left} {old}, {right} {new}'


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
