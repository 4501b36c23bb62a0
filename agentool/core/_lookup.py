"""The one not-found error, raised on every surface."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import AgenToolNotFoundError, did_you_mean, quote, suggest


def not_found(
    name: object, known: Iterable[str], *, kind: str = 'agentool', place: str = '', note: str = ''
) -> AgenToolNotFoundError:
    """The error for a name nothing is registered under, with suggestions from `known`, then `note`."""
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
