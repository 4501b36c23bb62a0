"""The trajectory diff: what changed between two runs or cassettes, named (`agentool cassette diff A B`)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ._changes import show_pair
from .cassette import canonical
from .log import CallRecord
from .trajectory import Trajectory

__all__ = ('RunDiff', 'diff_runs')


@dataclass(frozen=True, kw_only=True)
class RunDiff:
    """What changed from `before` to `after`: one readable line each, and the totals."""

    changes: list[str] = field(default_factory=list[str])
    requests: tuple[int, int] = (0, 0)
    tokens: tuple[int, int] = (0, 0)
    """Input plus output tokens, before and after."""
    cost: tuple[Decimal | None, Decimal | None] = (None, None)

    @property
    def same(self) -> bool:
        """Whether the two runs did the same thing (tokens and cost aside)."""
        return not self.changes

    def __str__(self) -> str:
        lines = [f'- {change}' for change in self.changes] or ['no change in tool calls, text or requests']
        lines.append(f'requests: {self.requests[0]} -> {self.requests[1]}')
        lines.append(f'tokens: {self.tokens[0]} -> {self.tokens[1]}')
        if self.cost != (None, None):
            lines.append(f'cost: {_money(self.cost[0])} -> {_money(self.cost[1])}')
        return '\n'.join(lines)


def diff_runs(before: object, after: object) -> RunDiff:
    """What changed from `before` to `after`: runs, message lists, cassettes or their paths, doubles
    (else a `ConfigurationError`; a `CassetteError` for an unreadable cassette)."""
    old, new = Trajectory.of(before), Trajectory.of(after)
    changes = _call_changes(list(old.calls), list(new.calls))
    if old.requests != new.requests:
        more = new.requests - old.requests
        changes.append(f'{abs(more)} request(s) {"added" if more > 0 else "removed"}: {old.requests} -> {new.requests}')
    if old.text != new.text:
        changes.append(f'text changed: {show_pair(old.text, new.text, old="before", new="after")}')
    if old.has_output and new.has_output and not new.output_matches(old.output) and not (old.text or new.text):
        shown = _shown(old.output), _shown(new.output)
        changes.append(f'output changed: {show_pair(*shown, old="before", new="after")}')
    return RunDiff(
        changes=changes,
        requests=(old.requests, new.requests),
        tokens=(old.input_tokens + old.output_tokens, new.input_tokens + new.output_tokens),
        cost=(old.cost, new.cost),
    )


def _call_changes(before: list[CallRecord], after: list[CallRecord]) -> list[str]:
    # Aligned by tool name, so a call made with other arguments reads as changed, not removed and added.
    changes: list[str] = []
    for tag, i1, i2, j1, j2 in _alignment([c.tool for c in before], [c.tool for c in after]):
        if tag == 'equal':
            for old, new in zip(before[i1:i2], after[j1:j2], strict=True):
                if old.args != new.args:
                    changes.append(f'tool call {old.tool!r} changed: {_args_diff(old, new)}')
            continue
        changes.extend(f'tool call removed: {call.describe()}' for call in before[i1:i2])
        changes.extend(f'tool call added: {call.describe()}' for call in after[j1:j2])
    return changes


def _alignment(before: list[str], after: list[str]) -> Sequence[tuple[str, int, int, int, int]]:
    """difflib's opcodes; for very long runs, position by position (difflib's cost grows with the product)."""
    if len(before) * len(after) <= _MAX_ALIGNED:
        return difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
    common = min(len(before), len(after))
    opcodes: list[tuple[str, int, int, int, int]] = [
        ('equal' if before[i] == after[i] else 'replace', i, i + 1, i, i + 1) for i in range(common)
    ]
    if len(before) != len(after):
        opcodes.append(('replace', common, len(before), common, len(after)))
    return opcodes


_MAX_ALIGNED = 1_000_000


def _args_diff(old: CallRecord, new: CallRecord) -> str:
    names = sorted(set(old.args) | set(new.args))
    differing = [n for n in names if old.args.get(n, _MISSING) != new.args.get(n, _MISSING)]
    shown = [(name, old.args.get(name, '(absent)'), new.args.get(name, '(absent)')) for name in differing]
    return '; '.join(f'{name}: {show_pair(a, b, old="before", new="after")}' for name, a, b in shown)


_MISSING = object()


def _shown(output: object) -> object:
    """An output as JSON data (a typed output shows its fields, as its recording does)."""
    try:
        return canonical(output)
    except ValueError:  # nested past the serialiser's depth: its repr, bounded by the window
        return repr(output)


def _money(value: Decimal | None) -> str:
    return 'unknown' if value is None else f'${value:.6f}'
