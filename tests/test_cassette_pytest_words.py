"""Cassette errors say what to type where the user is: the pytest command for a model the plugin's
fixture made (its mode comes from `--agentool-record-mode`), the `CassetteModel` mode for one made in code."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ('pytester',)

INI = '[pytest]\nasyncio_default_fixture_loop_scope = function\nasyncio_mode = auto\n'

TESTS = """
import os
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from agentool.errors import CassetteError
from agentool.testing import CassetteModel, CassetteTools

PROMPT = os.environ.get('PROMPT', 'Paris?')

def real(messages, info):
    return ModelResponse(parts=[TextPart('sunny')])

async def test_weather(agentool_cassette):
    assert (await Agent().run(PROMPT, model=agentool_cassette(FunctionModel(real)))).output == 'sunny'

async def test_tool(agentool_cassette):
    model = agentool_cassette(FunctionModel(calls_lookup))
    agent = Agent()

    @agent.tool_plain
    def lookup(city: str) -> str:
        return 'sunny'

    assert (await agent.run('Paris?', model=model, capabilities=[CassetteTools(model)])).output == 'sunny'

def calls_lookup(messages, info):
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('lookup', {'city': PROMPT})])
    return ModelResponse(parts=[TextPart('sunny')])

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
    missing.assert_outcomes(passed=1, failed=3)
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

    # A tool call the cassette does not hold (its result dropped from the file): the option that records it.
    tool = pytester.runpytest_inprocess(
        '-p', 'no:cacheprovider', 'test_words.py::test_tool', '--agentool-record-mode=once'
    )
    tool.assert_outcomes(passed=1)
    cassette = pytester.path / 'cassettes' / 'test_words' / 'test_tool.json'
    data = json.loads(cassette.read_text())
    assert [call['tool'] for call in data['tool_calls']] == ['lookup']
    data['tool_calls'] = []
    cassette.write_text(json.dumps(data))
    unrecorded = pytester.runpytest_inprocess('-p', 'no:cacheprovider', 'test_words.py::test_tool')
    unrecorded.assert_outcomes(failed=1)
    assert 'record it with pytest test_words.py::test_tool --agentool-record-mode=all' in unrecorded.stdout.str()

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
