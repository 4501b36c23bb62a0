"""The command line's own failures, apart from the library's typed errors; this module imports nothing."""

from __future__ import annotations

__all__ = ('CLIError', 'UsageError', 'MAX_ERROR_LINE')

MAX_ERROR_LINE = 1900
"""The longest error line the command writes, whatever the caller sent."""


class CLIError(Exception):
    """A failure reported as one line on stderr, with exit status 1."""


class UsageError(CLIError):
    """Options that do not go together, found after parsing: one line on stderr, exit status 2."""
