"""What `agentool cassette show|diff|prune|scrub` do, and the unused-exchange report of the pytest plugin.

The CLI only declares the arguments and imports this module when a cassette command runs; all the
logic is here. Each command returns its text (printed by the CLI) or raises a `CassetteError`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from ..errors import CassetteError
from ._files import as_path, read_json, write_json
from .cassette import Cassette
from .cassette_model import CassetteModel
from .diff import diff_runs
from .scrub import scrub
from .trajectory import Trajectory

__all__ = ('show', 'diff', 'prune', 'scrub_files', 'unused_report', 'unused_path')


def show(path: str | os.PathLike[str]) -> str:
    """Each exchange (tools called, text, finish reason), then usage totals and cost where known."""
    cassette = Cassette.load(path)
    found = Trajectory.of(cassette)
    lines = [f'cassette {os.fspath(path)}: model {cassette.model.model_name or "(unknown)"}']
    lines.append(f'{found.requests} exchange(s), {len(cassette.tool_calls)} recorded tool result(s)')
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
    beside its cassette for `agentool cassette prune` (a stale list is removed)."""
    sections: list[str] = []
    for model in models:
        if model.records or model.path is None:
            continue
        listing = unused_path(model.path)
        unused = model.unused_exchanges()
        if not unused:
            listing.unlink(missing_ok=True)
            continue
        numbers = [model.cassette.exchanges.index(exchange) + 1 for exchange in unused]
        steps = Trajectory.of(Cassette(model=model.cassette.model, exchanges=unused)).steps
        described = [
            f'  exchange {n}: {step.describe().split(". ", 1)[1]}' for n, step in zip(numbers, steps, strict=True)
        ]
        write_json(listing, [exchange.fingerprint for exchange in unused], 'unused-exchange list', CassetteError)
        head = f'cassette {str(model.path)!r}: {len(unused)} recorded exchange(s) were never used:'
        sections.append('\n'.join([head, *described]))
    if not sections:
        return ''
    return (
        '\n'.join(sections)
        + '\nThe test no longer does what was recorded: re-record it, drop them with `agentool cassette prune '
        'FILE`, or allow it with @pytest.mark.agentool_cassette(allow_unused=True) '
        '(ini: agentool_allow_unused_exchanges = true).'
    )


def prune(paths: Sequence[str | os.PathLike[str]]) -> str:
    """Drop the exchanges the last replay of each cassette left unused (as the pytest plugin listed them)."""
    lines: list[str] = []
    for given in paths:
        path = as_path(given, 'cassette', CassetteError)
        cassette = Cassette.load(path)
        listing = unused_path(path)
        if not listing.exists():
            lines.append(f'{path}: nothing to prune (no replay left exchanges unused)')
            continue
        data = read_json(listing, 'unused-exchange list', CassetteError, missing='')
        if not isinstance(data, list):
            raise CassetteError(f'{str(listing)!r} is not an unused-exchange list', path=str(listing), reason='invalid')
        drop = {str(item) for item in cast('list[object]', data)}
        kept = [exchange for exchange in cassette.exchanges if exchange.fingerprint not in drop]
        dropped = len(cassette.exchanges) - len(kept)
        cassette.exchanges = kept
        cassette.save(path)
        listing.unlink(missing_ok=True)
        lines.append(f'{path}: dropped {dropped} unused exchange(s), kept {len(kept)}')
    return '\n'.join(lines)


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
