"""Bounded quoting for dispatch: an error quotes what a prompt held only up to a fixed length.

A prompt can be megabytes long; an error message or a `details` value that repeated it in full
would cost as much again in every log line it reaches. Messages quote through `errors.quote`.
"""

from __future__ import annotations

from ..errors import quote

__all__ = ('QUOTE_BOUND', 'cut', 'quoted')

QUOTE_BOUND = 200
"""The most characters of a caller's text an error repeats."""


def cut(value: str) -> str:
    """`value`, or its first `QUOTE_BOUND` characters when it is longer (a `details` value)."""
    return value[:QUOTE_BOUND]


def quoted(value: str) -> str:
    """`value` quoted for a message, cut to `QUOTE_BOUND` characters with its length stated."""
    return quote(value, QUOTE_BOUND)
