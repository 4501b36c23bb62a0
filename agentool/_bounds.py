"""Bounded text for errors: quoting what a caller sent, cut short, and "did you mean" suggestions.

Re-exported by `agentool.errors`, whose `AgenToolError` bounds its text with these.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable, Sequence
from typing import Any, cast

MAX_MESSAGE_CHARS = 2000
"""No error message is longer: a longer one is cut, its original length stated (`AgenToolError`)."""

MAX_DETAIL_CHARS = 1000
"""No string in an error's `details` is longer; longer ones are cut, their original length stated."""

MAX_DETAIL_ITEMS = 100
"""No list or dict in an error's `details` holds more items; the rest are left out."""

MAX_DETAILS_CHARS = 4000
"""About how much text one error's `details` hold in all; past it, strings and lists are cut short."""

QUOTE_CHARS = 120
"""How much of a caller's value `quote` and `clip` keep by default."""

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 40
_REPR.maxlevel = 3


def quote(value: object, limit: int = QUOTE_CHARS) -> str:
    """`repr(value)` for a message, cut to about `limit` characters (and as much work), its length stated."""
    if isinstance(value, str | bytes):
        text = value
        if len(text) <= limit:
            return repr(text)
        unit = 'characters' if isinstance(text, str) else 'bytes'
        return f'{text[:limit]!r}... ({len(text):,} {unit})'
    if isinstance(value, list | tuple | dict | set | frozenset):
        text = _REPR.repr(value)  # bounded work however much the container holds
    elif isinstance(value, int) and value.bit_length() > 10_000:  # `repr` refuses ints this long
        text = f'<int of {value.bit_length():,} bits>'
    else:
        text = repr(value)
    return text if len(text) <= limit else f'{text[:limit]}...'


def clip(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` cut to `limit` characters with its original length stated: a caller's value in `details`."""
    return text if len(text) <= limit else f'{text[:limit]}... ({len(text):,} characters)'


def suggest(name: str, known: Iterable[str]) -> list[str]:
    """Up to three names from `known` close to `name`: similar spellings, then names containing it
    (a name far longer than every known one is close to none, so a megabyte name costs nothing)."""
    names = sorted(known)
    if not names or len(name) > 3 * max(map(len, names)):
        return []
    close = difflib.get_close_matches(name, names, n=3)
    lowered = name.lower()
    containing = [n for n in names if len(lowered) >= 3 and lowered in n.lower()]
    return list(dict.fromkeys([*close, *containing]))[:3]


def did_you_mean(suggestions: Sequence[str]) -> str:
    """The message's ending for `suggestions`: `"; did you mean 'a' or 'b'?"`, or `''` for none."""
    return f'; did you mean {" or ".join(map(quote, suggestions))}?' if suggestions else ''


class Budget:
    """What is left of `MAX_DETAILS_CHARS` while one error's details are bounded."""

    def __init__(self) -> None:
        self.left = MAX_DETAILS_CHARS

    def bounded(self, value: Any, depth: int = 0) -> Any:
        """`value` with strings and containers cut to what the budget has left (`value` itself if nothing was)."""
        if isinstance(value, str | bytes):
            text = value
            limit = max(20, min(MAX_DETAIL_CHARS, self.left))
            self.left -= min(len(text), limit)
            if len(text) <= limit:
                return text
            return clip(text, limit) if isinstance(text, str) else quote(text, limit)
        if not isinstance(value, list | tuple | dict):
            self.left -= 1
            return value
        if depth >= 6:
            return self.bounded(quote(cast(object, value), MAX_DETAIL_CHARS))
        is_dict = isinstance(value, dict)
        items: list[tuple[Any, Any]] = list(
            cast('dict[Any, Any]', value).items() if is_dict else enumerate(cast('Sequence[Any]', value))
        )
        kept: list[tuple[Any, Any]] = []
        for key, item in items[:MAX_DETAIL_ITEMS]:
            if self.left <= 0:
                break
            kept.append((self.bounded(key, depth + 1) if is_dict else key, self.bounded(item, depth + 1)))
        if len(kept) == len(items) and all(k is a and v is b for (k, v), (a, b) in zip(kept, items, strict=True)):
            return cast(object, value)
        if is_dict:
            return dict(kept)
        values = [v for _, v in kept]
        return values if isinstance(value, list) else tuple(values)


def bounded_message(message: str) -> str:
    """`message` cut to `MAX_MESSAGE_CHARS`, its original length stated."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    note = f'... (message cut: {len(message):,} characters)'
    return message[: MAX_MESSAGE_CHARS - len(note)] + note
