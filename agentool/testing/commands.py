"""What `agentool cassette show|diff|prune|scrub` do, and the unused-exchange report of the pytest plugin.

The CLI only declares the arguments and imports this module when a cassette command runs; all the
logic is here. Each command returns its text (printed by the CLI) or raises a `CassetteError`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from .._terminal import terminal_safe
from ..errors import CassetteError, quote
from ._files import as_path, read_json, write_json
from .cassette import Cassette
from .cassette_model import CassetteModel
from .diff import diff_runs
from .scrub import scrub
from .trajectory import Trajectory

__all__ = ('run', 'show', 'diff', 'prune', 'scrub_files', 'unused_report', 'unused_path')


def run(action: str, files: Sequence[str]) -> str:
    """What `agentool cassette ACTION FILE...` prints (control characters a cassette holds escaped)."""
    if action == 'show':
        text = '\n\n'.join(show(file) for file in files)
    elif action == 'diff':
        before, after = files
        text = diff(before, after)
    elif action == 'prune':
        text = prune(files)
    elif action == 'scrub':
        text = scrub_files(files)
    else:
        raise CassetteError(f'unknown cassette action {quote(action)}', reason='action')
    # The command line's own escaping: C0/C1 controls and the characters that reorder or hide text (bidi).
    return terminal_safe(text, keep_newlines=True)


def show(path: str | os.PathLike[str]) -> str:
    """Each exchange (tools called, text, finish reason), then usage totals and cost where known."""
    cassette = Cassette.load(path)
    found = Trajectory.of(cassette)
    lines = [f'cassette {os.fspath(path)}: model {cassette.model.model_name or "(unknown)"}']
    runs = f', {len(cassette.runs)} run(s) ({found.requests} model answer(s))' if cassette.runs else ''
    lines.append(f'{len(cassette.exchanges)} exchange(s){runs}, {len(cassette.tool_calls)} recorded tool result(s)')
    lines.extend(f'  {line}' for line in found.describe())
    lines.append(f'tokens: {found.input_tokens} in, {found.output_tokens} out')
    cost = found.cost
    lines.append(f'cost: ${cost:.6f}' if cost is not None else 'cost: unknown (no price data for this model)')
    return '\n'.join(lines)


def diff(before: str | os.PathLike[str], after: str | os.PathLike[str]) -> str:
    """What changed between two cassettes (see `agentool.testing.diff_runs`)."""
    return str(diff_runs(Path(before), Path(after)))


def unused_path(cassette: Path) -> Path:
    """Where a replay that left exchanges unused lists them, for `agentool cassette prune`."""
    return cassette.with_name(f'.{cassette.name}.unused')


def unused_report(models: Sequence[CassetteModel]) -> str:
    """The failure text for exchanges replays left unused ('' when none), and each one's list written
    beside its cassette for `agentool cassette prune` (a stale list is removed).

    Models replaying the same file count together: an exchange one of them used is used.
    """
    by_path: dict[Path, list[CassetteModel]] = {}
    for model in models:
        if model.path is not None:
            by_path.setdefault(model.path, []).append(model)
    sections: list[str] = []
    for path, group in by_path.items():
        listing = unused_path(path)
        if any(model.records for model in group):
            continue
        first, *others = (_unused_indices(model) for model in group)
        unused = first.intersection(*others)
        if not unused:
            listing.unlink(missing_ok=True)
            continue
        exchanges = group[0].cassette.exchanges
        numbers = sorted(unused)
        steps = Trajectory.of(Cassette(model=group[0].cassette.model, exchanges=[exchanges[i] for i in numbers])).steps
        described = [
            f'  exchange {n + 1}: {step.describe().split(". ", 1)[1]}' for n, step in zip(numbers, steps, strict=True)
        ]
        entries = [{'index': n, 'fingerprint': exchanges[n].fingerprint} for n in numbers]
        write_json(listing, entries, 'unused-exchange list', CassetteError)
        head = f'cassette {str(path)!r}: {len(numbers)} recorded exchange(s) were never used:'
        sections.append('\n'.join([head, *described]))
    if not sections:
        return ''
    return (
        '\n'.join(sections)
        + '\nThe test no longer does what was recorded: re-record it, drop them with `agentool cassette prune '
        'FILE`, or allow it with @pytest.mark.agentool_cassette(allow_unused=True) '
        '(ini: agentool_allow_unused_exchanges = true).'
    )


def _unused_indices(model: CassetteModel) -> set[int]:
    unused = {id(exchange) for exchange in model.unused_exchanges()}
    return {index for index, exchange in enumerate(model.cassette.exchanges) if id(exchange) in unused}


def prune(paths: Sequence[str | os.PathLike[str]]) -> str:
    """Drop the exchanges the last replay of each cassette left unused (as the pytest plugin listed them).

    Raises:
        CassetteError: a cassette or its list cannot be read, or the cassette changed since the list
            was written (its exchanges are not where the list says).
    """
    lines: list[str] = []
    for given in paths:
        path = as_path(given, 'cassette', CassetteError)
        cassette = Cassette.load(path)
        listing = unused_path(path)
        if not listing.exists():
            lines.append(f'{path}: nothing to prune (no replay left exchanges unused)')
            continue
        drop = _listed(listing, cassette)
        cassette.exchanges = [e for index, e in enumerate(cassette.exchanges) if index not in drop]
        cassette.save(path)
        listing.unlink(missing_ok=True)
        lines.append(f'{path}: dropped {len(drop)} unused exchange(s), kept {len(cassette.exchanges)}')
    return '\n'.join(lines)


def _listed(listing: Path, cassette: Cassette) -> set[int]:
    data: object = read_json(listing, 'unused-exchange list', CassetteError, missing='')
    entries = cast('list[object]', data) if isinstance(data, list) else None
    drop: set[int] = set()
    for entry in entries if entries is not None else [None]:
        index = cast('dict[str, object]', entry).get('index') if isinstance(entry, dict) else None
        fingerprint = cast('dict[str, object]', entry).get('fingerprint') if isinstance(entry, dict) else None
        if type(index) is not int or not 0 <= index < len(cassette.exchanges):  # `true` is no index
            raise CassetteError(f'{str(listing)!r} is not an unused-exchange list', path=str(listing), reason='invalid')
        if cassette.exchanges[index].fingerprint != fingerprint:
            raise CassetteError(
                f'{str(listing)!r} lists exchange {index + 1}, which changed since the replay that listed it; '
                'run the tests again before pruning',
                path=str(listing),
                reason='stale',
            )
        drop.add(index)
    return drop


def scrub_files(paths: Sequence[str | os.PathLike[str]]) -> str:
    """Apply the default scrubbing to existing cassettes, rewriting those that held a secret."""
    lines: list[str] = []
    for given in paths:
        path = as_path(given, 'cassette', CassetteError)
        cassette = Cassette.load(path)
        data = cassette.model_dump(mode='json')
        cleaned = scrub(data)
        if cleaned == data:
            lines.append(f'{path}: clean')
            continue
        Cassette.from_data(cleaned, source=str(path)).save(path)
        lines.append(f'{path}: scrubbed')
    return '\n'.join(lines)
