"""Text for a terminal: control characters escaped, errors on one bounded line (the full text to the log).

A description, an input or a tool's exception can hold ESC sequences (which recolour, move the
cursor or retitle the window), a carriage return (which overwrites what was printed) or hundreds
of lines. What the command line prints shows each such character as an escape (`\\x1b`, `\\r`)
instead, and an error stays one line, as documented; the untouched text goes to the
`agentool.cli` logger at INFO, for whoever configures logging.

A server's log is read on a terminal too: `SafeLogRecords` escapes and bounds every record of the
loggers it filters (its message and its traceback), since what a client sent (a tool's arguments
echoed in an exception, a Host header) ends up in them.
"""

from __future__ import annotations

import logging
import re

from ._bounds import clip

__all__ = ('LOGGER', 'terminal_safe', 'error_line', 'SafeLogRecords', 'LOG_LINE_CHARS', 'LOG_LINES')

LOGGER = logging.getLogger('agentool.cli')
"""Where the command line logs an error's full text (silent unless logging is configured)."""

# C0 and C1 controls and DEL, plus the characters that reorder or hide text (bidi controls, zero
# width joiners, line and paragraph separators): a terminal acts on them instead of showing them.
_UNSAFE = re.compile('[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]')
_UNSAFE_IN_LINES = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]')
"""The same, but for line breaks and tabs."""
_NAMED = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f'\\x{ord(char):02x}' if ord(char) < 0x100 else f'\\u{ord(char):04x}')


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control (and text-reordering) character shown as an escape.

    With `keep_newlines`, line breaks and tabs stay (multi-line output such as a description).
    """
    return (_UNSAFE_IN_LINES if keep_newlines else _UNSAFE).sub(_escape, text)


def error_line(text: str, limit: int) -> str:
    """`text` as one terminal-safe line of at most `limit` characters; the full text is logged."""
    if '\n' in text or len(text) > limit or _UNSAFE.search(text):
        LOGGER.info('full error text: %s', text)
    return clip(terminal_safe(text.rstrip('\n')), limit)


LOG_LINE_CHARS = 2000
"""No line of a filtered log record (its message, each line of its traceback) is longer."""

LOG_LINES = 200
"""No filtered traceback has more lines: the last ones are kept (they name the exception)."""


class SafeLogRecords(logging.Filter):
    """Escape and bound each record: message on one line of `LOG_LINE_CHARS` at most, traceback escaped.

    The record is rewritten in place (its arguments formatted in, its traceback text set), so every
    handler writes the safe text; nothing is dropped.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = clip(terminal_safe(record.getMessage()), LOG_LINE_CHARS)
        record.args = None
        if record.exc_info and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            lines = [clip(terminal_safe(line), LOG_LINE_CHARS) for line in text.splitlines()]
            cut = len(lines) - LOG_LINES
            record.exc_text = '\n'.join(([f'... ({cut} lines left out)'] if cut > 0 else []) + lines[-LOG_LINES:])
        return True
