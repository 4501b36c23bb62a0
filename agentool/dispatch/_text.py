"""Bounded quoting: an error quotes what a prompt held only up to a fixed length.

A prompt can be megabytes long; an error message or a `details` value that repeated it in full
would cost as much again in every log line it reaches.
"""

from __future__ import annotations

__all__ = ('QUOTE_BOUND', 'cut', 'quoted')

QUOTE_BOUND = 200
"""The most characters of a caller's text an error repeats."""


def cut(value: str) -> str:
    """`value`, or its first `QUOTE_BOUND` characters when it is longer."""
    return value if len(value) <= QUOTE_BOUND else value[:QUOTE_BOUND]


def quoted(value: str) -> str:
    """`value` quoted for a message (`repr`), cut to `QUOTE_BOUND` characters with its length stated."""
    if len(value) <= QUOTE_BOUND:
        return repr(value)
    return f'{value[:QUOTE_BOUND]!r}... ({len(value)} characters)'
