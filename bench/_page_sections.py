"""Sections of docs/benchmarks.md written by benchmarks other than `make bench`, kept when it rewrites the page.

A section sits between `<!-- NAME:start -->` and `<!-- NAME:end -->` at the end of the page:
`make bench-durable` writes the `durable` one, and `make bench` carries every section over.
"""

from __future__ import annotations

import re

__all__ = ('sections_of', 'with_section')

_SECTION = re.compile(r'<!-- (?P<name>[\w-]+):start -->\n.*?<!-- (?P=name):end -->\n', re.DOTALL)


def sections_of(page: str) -> str:
    """Every kept section of `page`, in order (empty when there is none)."""
    return ''.join(match.group(0) for match in _SECTION.finditer(page))


def with_section(page: str, name: str, body: str) -> str:
    """`page` with section `name` holding `body`: replaced where it is, else appended at the end."""
    block = f'<!-- {name}:start -->\n{body.rstrip()}\n<!-- {name}:end -->\n'
    existing = [match for match in _SECTION.finditer(page) if match.group('name') == name]
    if existing:
        match = existing[0]
        return page[: match.start()] + block + page[match.end() :]
    return f'{page.rstrip()}\n\n{block}'
