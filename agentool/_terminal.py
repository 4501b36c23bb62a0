"""Text for a terminal: control characters escaped, errors on one bounded line (the full text to the log).

`SafeLogRecords` does the same for a server's log records, which quote what clients sent.
"""

from __future__ import annotations

import logging
import re
from traceback import TracebackException

from ._bounds import clip

LOGGER = logging.getLogger('agentool.cli')
"""Where the command line logs an error's full text (silent unless logging is configured)."""

# Controls, and characters that reorder or hide text: a terminal acts on them instead of showing them.
_UNSAFE = re.compile('[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]')
_UNSAFE_IN_LINES = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]')
"""The same, but for line breaks and tabs."""
_NAMED = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f'\\x{ord(char):02x}' if ord(char) < 0x100 else f'\\u{ord(char):04x}')


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control (and text-reordering) character escaped; `keep_newlines` keeps breaks and tabs."""
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
    """Escape and bound each record in place (message on one line, traceback escaped), so every handler writes it."""

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
    """`error`'s traceback, terminal-safe; its text escaped whole, so no line reads as another record."""
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
