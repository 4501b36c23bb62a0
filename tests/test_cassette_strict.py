"""Strict cassettes in pytest: unused exchanges fail the test, one file per test id, no library frames in failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentool.cli import main
from agentool.testing import Cassette
from agentool.testing.commands import unused_path

pytest_plugins = ('pytester',)

INI = '[pytest]\nasyncio_default_fixture_loop_scope = function\nasyncio_mode = auto\n'

TWO_PROMPTS = """
import os
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

PROMPTS = os.environ.get('PROMPTS', 'Paris?,Rome?').split(',')

async def test_weather(agentool_cassette):
    model = agentool_cassette(FunctionModel(real))
    for prompt in PROMPTS:
        assert (await Agent().run(prompt, model=model)).output == 'sunny'

@pytest.mark.agentool_cassette(allow_unused=True)
async def test_allowed(agentool_cassette):
    model = agentool_cassette(FunctionModel(real))
    for prompt in PROMPTS:
        assert (await Agent().run(prompt, model=model)).output == 'sunny'
"""


def test_a_replay_leaving_an_exchange_unused_fails_and_prune_drops_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_weather=TWO_PROMPTS)
    recorded = pytester.runpytest_inprocess('-p', 'no:cacheprovider', '--agentool-record-mode=once')
    recorded.assert_outcomes(passed=2)
    monkeypatch.setenv('PROMPTS', 'Paris?')
    replayed = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    replayed.assert_outcomes(passed=2, errors=1)
    text = replayed.stdout.str()
    assert '1 recorded exchange(s) were never used' in text
    assert "exchange 2 (prompt 'Rome?'): 'sunny'" in text  # the prompt that made it, and its answer
    assert 'pytest test_weather.py::test_weather --agentool-record-mode=all' in text
    assert 'agentool/testing/' not in text  # no library frames
    cassette = pytester.path / 'cassettes' / 'test_weather' / 'test_weather.json'
    assert main(['cassette', 'prune', str(cassette)]) == 0
    assert 'dropped 1 unused exchange(s), kept 1' in capsys.readouterr().out
    assert len(Cassette.load(cassette).exchanges) == 1
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=2)


def test_the_ini_option_allows_unused_exchanges(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini(INI + 'agentool_allow_unused_exchanges = true\n')
    pytester.makepyfile(test_weather=TWO_PROMPTS)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider', '--agentool-record-mode=once').assert_outcomes(passed=2)
    monkeypatch.setenv('PROMPTS', 'Paris?')
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=2)


PARAMETRIZED = """
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def real(messages, info):
    return ModelResponse(parts=[TextPart(messages[0].parts[-1].content)])

@pytest.mark.parametrize('question', ['What is 2+2?', 'What is 2*2?', 'plain'])
async def test_math(agentool_cassette, agentool_cassette_path, question):
    result = await Agent().run(question, model=agentool_cassette(FunctionModel(real)))
    assert result.output == question
    print('PATH', agentool_cassette_path.name)
"""


def test_ids_differing_in_punctuation_get_their_own_files(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_math=PARAMETRIZED)
    for mode in ('once', 'none', 'all', 'none'):
        pytester.runpytest_inprocess('-p', 'no:cacheprovider', f'--agentool-record-mode={mode}').assert_outcomes(
            passed=3
        )
    names = sorted(p.name for p in (pytester.path / 'cassettes' / 'test_math').iterdir())
    assert len(names) == 3
    assert 'test_math_plain.json' in names  # a safe id keeps its plain name
    hashed = [n for n in names if n.startswith('test_math_What_is_2_2-')]
    assert len(hashed) == 2


FAILING = """
from pathlib import Path
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from agentool.testing import CassetteModel, trajectory

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

async def test_mismatch(tmp_path):
    path = tmp_path / 'c.json'
    await Agent().run('Paris?', model=CassetteModel(FunctionModel(real), cassette=path, mode='once'))
    await Agent().run('Rome?', model=CassetteModel(None, cassette=path))

async def test_missing():
    CassetteModel(None, cassette=Path('nowhere.json'))

async def test_assertion(tmp_path):
    result = await Agent().run('Paris?', model=FunctionModel(real))
    trajectory(result).assert_called('weather')
"""


def test_cassette_errors_and_failed_assertions_show_no_library_frames(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_failing=FAILING)
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    assert 'user prompt changed: ["Paris?"] recorded, ["Rome?"] sent' in text
    assert "tool 'weather' was not called" in text
    assert 'agentool/testing/' not in text


SHARED = """
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

async def test_two_agents(agentool_cassette, agentool_record_mode):
    # Recorded through one model; replayed through two on the same file: what either used is used.
    first = agentool_cassette(FunctionModel(real))
    second = first if agentool_record_mode == 'once' else agentool_cassette(None)
    assert (await Agent().run('Paris?', model=first)).output == 'sunny'
    assert (await Agent().run('Rome?', model=second)).output == 'sunny'
"""


def test_models_sharing_a_file_count_their_exchanges_together(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_shared=SHARED)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider', '--agentool-record-mode=once').assert_outcomes(passed=1)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider').assert_outcomes(passed=1)


def test_prune_refuses_a_list_older_than_its_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cassette = tmp_path / 'c.json'
    Cassette().save(cassette)
    assert main(['cassette', 'prune', str(cassette)]) == 0
    assert 'nothing to prune' in capsys.readouterr().out
    unused_path(cassette).write_text(json.dumps([{'index': 0, 'fingerprint': 'f'}]))
    assert main(['cassette', 'prune', str(cassette)]) == 1
    assert 'is not an unused-exchange list' in capsys.readouterr().err


def test_prune_refuses_a_boolean_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON `true` is not exchange 1 (Python's `bool` is an `int`): the list is refused, nothing pruned."""
    cassette = tmp_path / 'c.json'
    exchange = {'fingerprint': 'f', 'request': {}, 'response': {}}
    Cassette.model_validate({'exchanges': [exchange, {**exchange, 'fingerprint': 'g'}]}).save(cassette)
    unused_path(cassette).write_text(json.dumps([{'index': True, 'fingerprint': 'g'}]))
    assert main(['cassette', 'prune', str(cassette)]) == 1
    assert 'is not an unused-exchange list' in capsys.readouterr().err
    assert len(json.loads(cassette.read_text())['exchanges']) == 2
