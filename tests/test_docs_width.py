"""Code in the docs fits the page: no line inside a fenced code block is wider than 88 columns.

On the site a wider line scrolls sideways and hides the arguments that matter. Every fence counts,
whatever its language (Python, bash, JSON, text), in every page of docs/ and in the README. A fence
indented under a list item or an admonition is measured as the reader sees it, without that indent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 88
PAGES = sorted(path.relative_to(ROOT).as_posix() for path in [*(ROOT / 'docs').rglob('*.md'), ROOT / 'README.md'])

_FENCE = re.compile(r'^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$')


def wide_lines(text: str, width: int = WIDTH) -> list[tuple[int, int]]:
    """(line number, columns) of each line inside a fenced code block wider than `width`."""
    found: list[tuple[int, int]] = []
    opened: tuple[str, str] | None = None  # (indent, fence) of the block we are in
    for number, line in enumerate(text.splitlines(), 1):
        fence = _FENCE.match(line)
        if opened is None:
            if fence:
                opened = (fence['indent'], fence['fence'])
            continue
        indent, opening = opened
        closes = fence and fence['fence'][0] == opening[0] and len(fence['fence']) >= len(opening)
        if closes and fence and not fence['info'].strip():
            opened = None
            continue
        shown = line.removeprefix(indent)
        if len(shown) > width:
            found.append((number, len(shown)))
    return found


def test_wide_lines_are_found_inside_fences_only() -> None:
    wide = 'x' * (WIDTH + 1)
    text = '\n'.join(
        [
            wide,  # prose may be wide: it wraps
            '```python',
            'x' * WIDTH,
            wide,
            '```',
            '- item',
            '',
            '    ````text',
            '    ```',  # a shorter fence inside a longer one does not close it
            '    ' + wide,
            '    ````',
            wide,
        ]
    )
    assert wide_lines(text) == [(4, WIDTH + 1), (10, WIDTH + 1)]
    assert wide_lines('    ```\n    ' + 'x' * WIDTH + '\n    ```') == []  # the fence's own indent is not shown


@pytest.mark.parametrize('page', PAGES)
def test_code_lines_fit_in_88_columns(page: str) -> None:
    wide = wide_lines((ROOT / page).read_text())
    assert not wide, f'{page}: code lines wider than {WIDTH} columns (line, columns): {wide}'
