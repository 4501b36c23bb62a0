"""`agentool cassette show|diff|prune|scrub` touch only what they name and say what they did to each file.

A rewrite follows a symbolic link to its file and keeps the file's mode, atomically; every file
named is handled and reported, the ones that failed too; `show` bounds every value and names the
file in every error; a file nested too deep is a `CassetteError`; `diff` exits 1 on a difference.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import FunctionModel

from agentool.cli import main
from agentool.errors import CassetteError
from agentool.testing import Cassette, CassetteModel, diff_runs, trajectory
from agentool.testing.commands import prune, scrub_files, show
from tests.agentools import call_then_answer

KEY = 'sk-proj-' + 'A1b2C3d4E5f6G7h8I9j0K1l2'  # built here, never a real key


def _record(path: Path, text: str, *, scrub: bool = False) -> None:
    """A one-exchange cassette whose answer is `text` (written unscrubbed unless asked)."""
    model = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(text)]))
    Agent(output_type=str).run_sync('hi', model=CassetteModel(model, cassette=path, mode='all', scrub=scrub))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith('.tmp'))


# --- scrub ----------------------------------------------------------------------------------------


def test_scrub_through_a_symlink_scrubs_the_file_it_points_to_and_keeps_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / 'store' / 'real.json'
    real.parent.mkdir()
    _record(real, f'the key is {KEY}')
    link = tmp_path / 'link.json'
    link.symlink_to(real)
    assert main(['cassette', 'scrub', str(link)]) == 0
    assert capsys.readouterr().out == f'{link}: scrubbed (the file it links to, {real.resolve()})\n'
    assert link.is_symlink()
    assert link.resolve() == real.resolve()
    for file in [real, *tmp_path.rglob('*')]:  # nowhere: not the target, not a copy, not a temporary
        assert not file.is_file() or KEY not in file.read_text()
    assert _leftovers(real.parent) == []
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize('mode', [0o644, 0o600, 0o664])
def test_scrub_keeps_the_file_mode(tmp_path: Path, mode: int) -> None:
    path = tmp_path / 'c.json'
    _record(path, f'the key is {KEY}')
    path.chmod(mode)
    before = path.stat().st_ino
    assert [str(line) for line in scrub_files([path]).lines] == [f'{path}: scrubbed']
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.stat().st_ino != before  # replaced whole by a rename, never written in place
    assert KEY not in path.read_text()


def test_a_new_cassette_gets_the_mode_any_new_file_gets(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        _record(tmp_path / 'new.json', 'hello')
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / 'new.json').stat().st_mode) == 0o644  # not mkstemp's 0600


def test_scrub_says_what_it_rewrote_before_and_after_a_file_that_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad, later = tmp_path / 'good.json', tmp_path / 'bad.json', tmp_path / 'later.json'
    _record(good, f'the key is {KEY}')
    _record(later, f'the key is {KEY}')
    bad.write_text('{')
    assert main(['cassette', 'scrub', str(good), str(bad), str(later)]) == 1
    out, err = capsys.readouterr()
    assert out == f'{good}: scrubbed\n{later}: scrubbed\n'
    assert err.startswith(f"agentool: error: '{bad}' is not an agentool cassette")
    assert err.count('\n') == 1
    assert KEY not in good.read_text()
    assert KEY not in later.read_text()


def test_scrub_refuses_a_file_with_other_hard_links_which_would_keep_the_secret(tmp_path: Path) -> None:
    path, other = tmp_path / 'c.json', tmp_path / 'other-name.json'
    _record(path, f'the key is {KEY}')
    os.link(path, other)
    report = scrub_files([path])
    (failure,) = report.failures
    assert isinstance(failure, CassetteError)
    assert failure.details['reason'] == 'linked'
    assert '2 hard links' in str(failure)
    assert report.status == 1
    assert KEY in path.read_text()  # refused, not half done: the two names still hold one file
    assert path.stat().st_ino == other.stat().st_ino


def test_prune_reports_each_file_also_when_another_fails(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    _record(path, 'hello')
    report = prune([tmp_path / 'missing.json', path])
    assert report.lines == [f'{path}: nothing to prune (no replay left exchanges unused)']
    assert [f.details['reason'] for f in report.failures] == ['missing']
    assert report.status == 1


# --- show -----------------------------------------------------------------------------------------


def test_show_bounds_a_megabyte_argument(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'c.json'
    agent = Agent(output_type=str)

    @agent.tool_plain
    def store(blob: str, name: str) -> int:
        """Stores a blob."""
        return len(blob)

    model = call_then_answer('store', {'blob': 'x' * 1_000_000, 'name': 'a'})
    agent.run_sync('store it', model=CassetteModel(model, cassette=path, mode='once'))
    assert main(['cassette', 'show', str(path)]) == 0
    out = capsys.readouterr().out
    assert len(out) < 2_000
    assert '1. store({"blob":"xxxx' in out
    assert '(1,000,002 characters),"name":"a"})' in out  # the value cut, the next argument still shown
    assert "2. '1000000'" in out  # the answer: what the tool returned


def _unreadable_response(path: Path) -> Path:
    """A recorded cassette whose response pydantic-ai cannot read."""
    _record(path, 'hello')
    data = json.loads(path.read_text())
    data['exchanges'][0]['response']['parts'] = 'not parts'
    path.write_text(json.dumps(data))
    return path


def test_show_names_the_file_when_a_response_cannot_be_read(tmp_path: Path) -> None:
    path = _unreadable_response(tmp_path / 'c.json')
    for read in (show, trajectory, lambda p: diff_runs(p, p)):
        with pytest.raises(CassetteError, match='holds a response pydantic-ai cannot read') as caught:
            read(path)
        assert str(path) in str(caught.value)
        assert caught.value.details['path'] == str(path)


def test_a_replay_names_the_file_when_a_response_cannot_be_read(tmp_path: Path) -> None:
    path = _unreadable_response(tmp_path / 'c.json')
    with override_allow_model_requests(False), pytest.raises(CassetteError, match='cannot read') as caught:
        Agent(output_type=str).run_sync('hi', model=CassetteModel(None, cassette=path))
    assert str(path) in str(caught.value)


def _nested(depth: int) -> Any:
    value: Any = 'leaf'
    for _ in range(depth):
        value = {'a': value}
    return value


def test_a_cassette_nested_300_deep_is_a_cassette_error_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / 'deep.json'
    _record(path, 'hello')
    data = json.loads(path.read_text())
    data['exchanges'][0]['response']['parts'] = [{'part_kind': 'tool-call', 'tool_name': 't', 'args': _nested(300)}]
    path.write_text(json.dumps(data))
    for read in (Cassette.load, show, trajectory, lambda p: diff_runs(p, p), lambda p: CassetteModel(None, cassette=p)):
        with pytest.raises(CassetteError, match='nested more than 200 levels deep') as caught:
            read(path)
        assert caught.value.details['reason'] == 'too_deep'
        assert caught.value.details['path'] == str(path)
    assert main(['cassette', 'show', str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"agentool: error: cassette '{path}' is nested more than 200 levels deep")


def test_a_cassette_too_deep_to_read_is_never_written(tmp_path: Path) -> None:
    cassette = Cassette(tool_calls=[{'tool': 't', 'args': {}, 'result': _nested(230)}])  # pyright: ignore[reportArgumentType]
    with pytest.raises(CassetteError, match='nested more than 200 levels deep'):
        cassette.save(tmp_path / 'c.json')
    assert list(tmp_path.iterdir()) == []


def test_a_cassette_over_the_size_limit_is_a_cassette_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / 'huge.json'
    with path.open('wb') as stream:
        stream.truncate(65 * 1024 * 1024)  # sparse: its size, not its bytes, is what is refused
    with pytest.raises(CassetteError, match='over the limit') as caught:
        show(path)
    assert caught.value.details['reason'] == 'too_large'
    assert main(['cassette', 'show', str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"agentool: error: cassette '{path}' is 68157440 bytes")


# --- diff -----------------------------------------------------------------------------------------


def test_diff_exits_1_on_a_difference_and_0_without(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, same, after = tmp_path / 'before.json', tmp_path / 'same.json', tmp_path / 'after.json'
    _record(before, 'Sunny.', scrub=True)
    _record(same, 'Sunny.', scrub=True)
    _record(after, 'Rain.', scrub=True)
    assert main(['cassette', 'diff', str(before), str(same)]) == 0
    assert 'no change in tool calls, text or requests' in capsys.readouterr().out
    assert main(['cassette', 'diff', str(before), str(after)]) == 1
    assert 'text changed: "Sunny." before, "Rain." after' in capsys.readouterr().out
    assert main(['cassette', 'diff', str(before), str(tmp_path / 'missing.json')]) == 1
    out, err = capsys.readouterr()
    assert out == ''
    assert err.startswith('agentool: error: cassette')
