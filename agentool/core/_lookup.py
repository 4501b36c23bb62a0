"""Registry helpers with no state: "did you mean" lookups and the checks of `AgenToolRegistry.update`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from ..errors import AgenToolNotFoundError, InvalidUpdateError, did_you_mean, quote, suggest

__all__ = ('suggest', 'not_found', 'checked_update', 'UPDATABLE')


def not_found(name: str, known: Mapping[str, Any] | Sequence[str]) -> AgenToolNotFoundError:
    """An `AgenToolNotFoundError` for `name` with "did you mean" suggestions from `known`.

    A `name` that is not a string names nothing: the message says so and `agentool` is its repr.
    """
    given = cast(object, name)
    if not isinstance(given, str):
        return AgenToolNotFoundError(
            f'no agentool named {quote(given)} is registered: an agentool name is a string, got {type(given).__name__}',
            agentool=quote(given),
            suggestions=[],
        )
    suggestions = suggest(name, known)
    return AgenToolNotFoundError(
        f'no agentool named {quote(name)} is registered{did_you_mean(suggestions)}',
        agentool=name,
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
