"""What `agentool cassette show|diff|prune|scrub` do, and the unused-exchange report of the pytest plugin."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .._terminal import terminal_safe
from ..errors import AgenToolError, CassetteError, clip, quote
from ._files import as_path, read_json, write_json
from ._fingerprint import part_contents, tool_returns
from .cassette import Cassette, Exchange
from .cassette_model import CassetteModel
from .diff import diff_runs
from .scrub import scrub
from .trajectory import Trajectory

__all__ = ('Report', 'run', 'show', 'prune', 'scrub_files', 'unused_report', 'unused_path')

VALUE_CHARS = 160  # of one value (an argument, an output field) `show` prints, as `diff` shows it
_ARGS_SHOWN = 50  # arguments of one call `show` prints; the rest are counted


@dataclass(frozen=True, kw_only=True)
class Report:
    """What a cassette command did: its lines, and the errors of the files it could not handle."""

    lines: list[str] = field(default_factory=list[str])
    failures: list[AgenToolError] = field(default_factory=list[AgenToolError])
    differs: bool = False
    """`diff` found a difference (its exit status is 1, so CI can gate on it)."""

    @property
    def status(self) -> int:
        """The command's exit status: 0, or 1 when a file failed or `diff` found a difference."""
        return 1 if self.failures or self.differs else 0

    @property
    def text(self) -> str:
        """The lines, control characters a cassette holds escaped for the terminal."""
        return terminal_safe('\n'.join(self.lines), keep_newlines=True)

    def __str__(self) -> str:
        return self.text


def run(action: str, files: Sequence[str]) -> Report:
    """What `agentool cassette ACTION FILE...` does: what to print, and its failures."""
    if action == 'show':
        return _each(files, show)
    if action == 'diff':
        before, after = files
        try:
            found = diff_runs(Path(before), Path(after))
        except AgenToolError as error:
            return Report(failures=[error])
        return Report(lines=[str(found)], differs=not found.same)
    if action == 'prune':
        return prune(files)
    if action == 'scrub':
        return scrub_files(files)
    raise CassetteError(f'unknown cassette action {quote(action)}', reason='action')


def _each(files: Sequence[str | os.PathLike[str]], handle: Callable[[str | os.PathLike[str]], str]) -> Report:
    """`handle` each file in turn (its line); a file that fails is reported and the next one is still handled."""
    lines: list[str] = []
    failures: list[AgenToolError] = []
    for given in files:
        try:
            lines.append(handle(given))
        except AgenToolError as error:
            failures.append(error)
    return Report(lines=lines, failures=failures)


def show(path: str | os.PathLike[str]) -> str:
    """Each exchange (tools called, text, finish reason; each value cut at `VALUE_CHARS`), then
    usage totals and cost where known. A `CassetteError` names the file it cannot read."""
    cassette = Cassette.load(path)
    try:
        found = Trajectory.of(cassette)
    except CassetteError as error:  # about its content: a loaded cassette has no path to name
        if error.details.get('path') is not None:
            raise
        where = os.fspath(path)
        raise CassetteError(f'cassette {where!r}: {error.message}', **{**error.details, 'path': where}) from None
    model_name = clip(cassette.model.model_name or '(unknown)')
    lines = [f'cassette {os.fspath(path)}: model {model_name}']
    runs = f', {len(cassette.runs)} run(s) ({found.requests} model answer(s))' if cassette.runs else ''
    lines.append(f'{len(cassette.exchanges)} exchange(s){runs}, {len(cassette.tool_calls)} recorded tool result(s)')
    lines.extend(f'  {line}' for line in found.describe(width=VALUE_CHARS, count=_ARGS_SHOWN))
    lines.append(f'tokens: {found.input_tokens} in, {found.output_tokens} out')
    cost = found.cost
    lines.append(f'cost: ${cost:.6f}' if cost is not None else 'cost: unknown (no price data for this model)')
    return '\n'.join(lines)


def unused_path(cassette: Path) -> Path:
    """Where a replay that left exchanges unused lists them, for `agentool cassette prune`."""
    return cassette.with_name(f'.{cassette.name}.unused')


def unused_report(models: Sequence[CassetteModel]) -> str:
    """The failure text for exchanges replays left unused ('' when none), listed beside each cassette for
    `agentool cassette prune`. Models replaying one file count together."""
    by_path: dict[Path, list[CassetteModel]] = {}
    for model in models:
        if model.path is not None:
            by_path.setdefault(model.path, []).append(model)
    sections: list[str] = []
    rerecord = ''
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
            f'  exchange {n + 1} ({_asked(exchanges[n])}): '
            + step.describe(width=VALUE_CHARS, count=_ARGS_SHOWN).split('. ', 1)[1]
            for n, step in zip(numbers, steps, strict=True)
        ]
        entries = [{'index': n, 'fingerprint': exchanges[n].fingerprint} for n in numbers]
        write_json(listing, entries, 'unused-exchange list')
        head = f'cassette {str(path)!r}: {len(numbers)} recorded exchange(s) were never used:'
        sections.append('\n'.join([head, *described]))
        rerecord = group[0].advice.rerecord(keep=False)
    if not sections:
        return ''
    return (
        '\n'.join(sections) + f'\nThe test no longer does what was recorded: re-record it ({rerecord}), drop them with '
        '`agentool cassette prune FILE`, or allow it with @pytest.mark.agentool_cassette(allow_unused=True) '
        '(ini: agentool_allow_unused_exchanges = true).'
    )


def _asked(exchange: Exchange) -> str:
    """What made the exchange: its run's latest user prompt, and the tool results it answered."""
    messages = cast('list[dict[str, Any]]', exchange.request.get('messages') or [])
    prompt = (part_contents(messages, 'user-prompt') or [None])[-1]
    returned = sorted({str(part.get('tool_name')) for part in tool_returns(exchange.request)})
    said = f'prompt {quote(prompt)}' if prompt is not None else 'no user prompt'
    if returned:
        said += f', after the result of {", ".join(clip(name) for name in returned[:5])}'
    return said


def _unused_indices(model: CassetteModel) -> set[int]:
    unused = {id(exchange) for exchange in model.unused_exchanges()}
    return {index for index, exchange in enumerate(model.cassette.exchanges) if id(exchange) in unused}


def prune(paths: Sequence[str | os.PathLike[str]]) -> Report:
    """Drop the exchanges the last replay of each cassette left unused (as the pytest plugin listed
    them); a file that fails (say, changed since) is a failure of the report."""
    return _each(paths, _prune_one)


def _prune_one(given: str | os.PathLike[str]) -> str:
    path = as_path(given)
    cassette = Cassette.load(path)
    listing = unused_path(path)
    if not listing.exists():
        return f'{path}: nothing to prune (no replay left exchanges unused)'
    drop = _listed(listing, cassette)
    cassette.exchanges = [e for index, e in enumerate(cassette.exchanges) if index not in drop]
    cassette.save(path)
    listing.unlink(missing_ok=True)
    return f'{path}: dropped {len(drop)} unused exchange(s), kept {len(cassette.exchanges)}{_linked(path)}'


def _listed(listing: Path, cassette: Cassette) -> set[int]:
    data: object = read_json(listing, 'unused-exchange list', missing='')
    drop: set[int] = set()
    for entry in cast('list[object]', data) if isinstance(data, list) else [None]:
        fields = cast('dict[str, object]', entry) if isinstance(entry, dict) else {}
        index, fingerprint = fields.get('index'), fields.get('fingerprint')
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


def scrub_files(paths: Sequence[str | os.PathLike[str]]) -> Report:
    """Apply the default scrubbing to existing cassettes, rewriting (atomically, mode kept) those
    that held a secret; a file with other hard links is refused (they would keep the secret)."""
    return _each(paths, _scrub_one)


def _scrub_one(given: str | os.PathLike[str]) -> str:
    path = as_path(given)
    cassette = Cassette.load(path)
    data = cassette.model_dump(mode='json')
    cleaned = scrub(data)
    if cleaned == data:
        return f'{path}: clean'
    try:
        links = path.stat().st_nlink
    except OSError:
        links = 1  # read a moment ago: the write will say what is wrong
    if links > 1:
        raise CassetteError(
            f'cassette {str(path)!r} holds a secret but has {links} hard links: rewriting it would leave '
            'the secret under its other names; scrub a copy and replace each of them with it',
            path=str(path),
            reason='linked',
            links=links,
        )
    Cassette.from_data(cleaned, source=str(path)).save(path)
    return f'{path}: scrubbed{_linked(path)}'


def _linked(path: Path) -> str:
    """`(the file it links to, TARGET)` for a symbolic link: what was rewritten is that file."""
    return f' (the file it links to, {path.resolve()})' if path.is_symlink() else ''
