"""Lookups with no state: the one not-found error, raised on every surface, and the checks of `update`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

from ..errors import AgenToolNotFoundError, InvalidUpdateError, did_you_mean, quote, suggest

__all__ = ('not_found', 'checked_update', 'UPDATABLE')


def not_found(
    name: object, known: Iterable[str], *, kind: str = 'agentool', place: str = '', note: str = ''
) -> AgenToolNotFoundError:
    """The one error for a name nothing is registered under, on every surface (registry, injector, DBOS).

    `no {kind} named 'x' is registered {place}`, with suggestions from `known`, then `note`; `details`
    hold `name` (a bounded `repr` when it is not a string) and `suggestions`.
    """
    where = f' {place}' if place else ''
    if not isinstance(name, str):
        return AgenToolNotFoundError(
            f'no {kind} named {quote(name)} is registered{where}: {kind} names are strings, got {type(name).__name__}',
            name=quote(name),
            suggestions=[],
        )
    suggestions = suggest(name, known)
    return AgenToolNotFoundError(
        f'no {kind} named {quote(name)} is registered{where}{did_you_mean(suggestions)}{note}',
        agentool=name,
        name=name,
        suggestions=suggestions,
    )


UPDATABLE = ('description', 'version', 'tags', 'examples')


def checked_update(name: str, field: str, value: object) -> object:
    """`value` checked (and lists copied) for `update`; raises `InvalidUpdateError` naming the field."""
    if field not in UPDATABLE:
        raise InvalidUpdateError(
            f'agentool {name!r}: field {quote(field)} cannot be updated (updatable: {", ".join(UPDATABLE)}); '
            'create the agentool again with replace=True to change anything else',
            agentool=name,
            field=field,
        )
    if field in ('description', 'version'):
        if isinstance(value, str) or (value is None and field == 'description'):
            return value
        expected = 'a string or None' if field == 'description' else 'a string'
    else:
        iterable = isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping)
        items = list(cast('Iterable[object]', value)) if iterable else None
        item_type = dict if field == 'examples' else str  # tags: strings
        if items is not None and all(isinstance(item, item_type) for item in items):
            return items
        expected = 'a list of dicts' if field == 'examples' else 'a list of strings'
    raise InvalidUpdateError(
        f'agentool {name!r}: {field} must be {expected}, got {quote(cast(object, value))}', agentool=name, field=field
    )
