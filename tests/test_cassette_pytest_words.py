"""Cassette errors say what to type where the user is: the pytest command for a model the plugin's
fixture made (its mode comes from `--agentool-record-mode`), the `CassetteModel` mode for one made in code."""

from __future__ import annotations

import pytest

pytest_plugins = ('pytester',)

INI = '[pytest]\nasyncio_default_fixture_loop_scope = function\nasyncio_mode = auto\n'

TESTS = """
import os
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel
from agentool.errors import CassetteError
from agentool.testing import CassetteModel

PROMPT = os.environ.get('PROMPT', 'Paris?')

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

async def test_weather(agentool_cassette):
    assert (await Agent().run(PROMPT, model=agentool_cassette(FunctionModel(real)))).output == 'sunny'

async def test_no_model(agentool_cassette):
    await Agent().run(PROMPT, model=agentool_cassette(None))

def test_in_code(tmp_path):
    with pytest.raises(CassetteError) as caught:
        CassetteModel(None, cassette=tmp_path / 'c.json')
    print('IN CODE:', caught.value)
"""


def test_errors_name_the_pytest_option_for_a_fixture_model_and_the_mode_in_code(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_words=TESTS)
    missing = pytester.runpytest_inprocess('-p', 'no:cacheprovider', '-s', 'test_words.py')
    missing.assert_outcomes(passed=1, failed=2)
    text = missing.stdout.str()
    assert 'record it first (pytest test_words.py::test_weather --agentool-record-mode=once)' in text
    assert 'IN CODE:' in text
    assert 'record it first (CassetteModel in mode "once" or "all", or Recorder)' in text

    # What the message says to type records the test; then it replays.
    recorded = pytester.runpytest_inprocess(
        '-p', 'no:cacheprovider', 'test_words.py::test_weather', '--agentool-record-mode=once'
    )
    recorded.assert_outcomes(passed=1)
    pytester.runpytest_inprocess('-p', 'no:cacheprovider', 'test_words.py::test_weather').assert_outcomes(passed=1)

    monkeypatch.setenv('PROMPT', 'Rome?')
    changed = pytester.runpytest_inprocess('-p', 'no:cacheprovider', 'test_words.py::test_weather')
    changed.assert_outcomes(failed=1)
    assert (
        'Re-record with pytest test_words.py::test_weather --agentool-record-mode=all '
        '(or --agentool-record-mode=new_episodes) if the change is intended.'
    ) in changed.stdout.str()
    assert 'mode "all"' not in changed.stdout.str()

    no_model = pytester.runpytest_inprocess(
        '-p', 'no:cacheprovider', 'test_words.py::test_no_model', '--agentool-record-mode=once'
    )
    no_model.assert_outcomes(failed=1)
    assert 'pass the real model to the agentool_cassette fixture' in no_model.stdout.str()


def test_a_test_id_that_needs_quoting_is_quoted_for_the_shell(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(
        test_ids="""
import pytest

@pytest.mark.parametrize('city', ["Paris; rm -rf ~"])
async def test_city(agentool_cassette, city):
    agentool_cassette(None)
"""
    )
    result = pytester.runpytest_inprocess('-p', 'no:cacheprovider')
    result.assert_outcomes(failed=1)
    assert "(pytest 'test_ids.py::test_city[Paris; rm -rf ~]' --agentool-record-mode=once)" in result.stdout.str()
