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
from traceback import TracebackException

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
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            lines = [
                clip(line, LOG_LINE_CHARS) for line in _traceback(TracebackException.from_exception(record.exc_info[1]))
            ]
            cut = len(lines) - LOG_LINES
            record.exc_text = '\n'.join(([f'... ({cut} lines left out)'] if cut > 0 else []) + lines[-LOG_LINES:])
        return True


def _traceback(error: TracebackException) -> list[str]:
    """`error`'s traceback as `traceback` writes it, each line terminal-safe.

    An exception's text is escaped whole (its line breaks too), so it can never start a line of
    its own that reads as another log record; the frames' lines are escaped one by one.
    """
    lines: list[str] = []
    if error.__cause__ is not None:
        lines += [*_traceback(error.__cause__), '', _CAUSE, '']
    elif error.__context__ is not None and not error.__suppress_context__:
        lines += [*_traceback(error.__context__), '', _CONTEXT, '']
    if error.stack:
        lines.append('Traceback (most recent call last):')
        lines += [terminal_safe(line) for frame in error.stack.format() for line in frame.rstrip('\n').split('\n')]
    lines += [terminal_safe(part.rstrip('\n')) for part in error.format_exception_only()]
    for number, member in enumerate(error.exceptions or (), 1):  # an exception group's members
        lines += [f'  +---- {number} ----', *(f'  | {line}' for line in _traceback(member))]
    return lines


_CAUSE = 'The above exception was the direct cause of the following exception:'
_CONTEXT = 'During handling of the above exception, another exception occurred:'
