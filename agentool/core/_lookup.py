"""Lookups with no state: the one not-found error, raised on every surface, and the checks of `update`."""

from __future__ import annotations

from collections.abc import Iterable

from .._options import check_examples, check_strings, check_text
from ..errors import AgenToolNotFoundError, ConfigurationError, InvalidUpdateError, did_you_mean, quote, suggest

__all__ = ('not_found', 'checked_update', 'UPDATABLE')


def not_found(
    name: object, known: Iterable[str], *, kind: str = 'agentool', place: str = '', note: str = ''
) -> AgenToolNotFoundError:
    """The one error for a name nothing is registered under, on every surface, with suggestions from
    `known` and then `note`; `details` hold `name` (a bounded `repr` when not a string) and `suggestions`."""
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
    try:
        if field == 'tags':
            return check_strings('tags', value)
        if field == 'examples':
            return check_examples(value)
        check_text(field, value, optional=field == 'description')
    except ConfigurationError as error:  # the checks `AgenToolConfig` makes, as the update's own error
        raise InvalidUpdateError(f'agentool {name!r}: {error.message}', agentool=name, field=field) from None
    return value
