"""Two long values cut around where they first differ, so both sides of a diff show the difference."""

from __future__ import annotations

import json
from typing import Any

__all__ = ('window', 'show_pair')


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
    return f'{"..." if start > 0 else ""}{text[start:end]}{"..." if end < len(text) else ""}'


def show_pair(before: Any, after: Any, *, old: str = 'recorded', new: str = 'sent', limit: int = 160) -> str:
    """`<before> recorded, <after> sent` as JSON, both windowed around their first difference."""
    left, right = window(_json(before), _json(after), limit)
    return f'{left} {old}, {right} {new}'


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
