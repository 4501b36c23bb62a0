"""The one table the bench prints: a row per ratio, with its target and whether it was met."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ('Row', 'duration', 'size', 'render_markdown')


@dataclass(frozen=True, kw_only=True)
class Row:
    """One measured ratio against its target.

    `ratio` is subject / baseline, both measured in the same process run. With `at_least` the
    target is a floor (throughput), otherwise a ceiling (time, memory).
    """

    benchmark: str
    measured: str
    """The two absolute numbers behind the ratio, for context (they vary by machine; the ratio is the result)."""
    ratio: float
    target: float
    kind: Literal['at_most', 'at_least'] = 'at_most'
    cause: str = ''
    """Why the target is missed, when it is: shown under the table only for missed rows."""

    @property
    def met(self) -> bool:
        """Whether the ratio is on the right side of the target."""
        return self.ratio >= self.target if self.kind == 'at_least' else self.ratio <= self.target

    @property
    def target_text(self) -> str:
        return f'{"≥" if self.kind == "at_least" else "≤"} {self.target:.2f}x'


def duration(seconds: float) -> str:
    """`seconds` with a unit a reader takes in at a glance (µs, ms or s)."""
    if seconds < 1e-3:
        return f'{seconds * 1e6:.2f} µs'
    if seconds < 1:
        return f'{seconds * 1e3:.2f} ms'
    return f'{seconds:.2f} s'


def size(n_bytes: float) -> str:
    """`n_bytes` in KiB."""
    return f'{n_bytes / 1024:.1f} KiB'


def _cell(text: str) -> str:
    return text.replace('|', '\\|')


def render_markdown(rows: list[Row]) -> str:
    """The rows as one Markdown table, then a note per missed target naming its cause."""
    lines = [
        '| Benchmark | Measured (subject vs baseline) | Ratio | Target | Result |',
        '| --- | --- | ---: | ---: | --- |',
    ]
    for row in rows:
        result = 'met' if row.met else '**missed**'
        lines.append(
            f'| {_cell(row.benchmark)} | {_cell(row.measured)} | {row.ratio:.2f}x | {row.target_text} | {result} |'
        )
    missed = [row for row in rows if not row.met]
    if missed:
        lines += ['', 'Missed targets:', '']
        lines += [f'- {row.benchmark}: {row.cause or "cause not yet known."}' for row in missed]
    return '\n'.join(lines) + '\n'
