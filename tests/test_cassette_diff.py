"""The trajectory diff (function and `agentool cassette diff`), and the windows of the cassette mismatch error."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agentool.cli import main
from agentool.errors import CassetteMismatchError
from agentool.testing import Cassette, CassetteModel, diff_runs
from tests.agentools import call_then_answer


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Looks up Paris; told to be thorough, it also looks up the alerts, with other arguments."""
    thorough = 'thorough' in (info.instructions or '')
    usage = RequestUsage(input_tokens=20 if thorough else 10, output_tokens=5)
    step = sum(isinstance(m, ModelResponse) for m in messages)
    if step == 0:
        unit = 'F' if thorough else 'C'
        return ModelResponse(parts=[ToolCallPart('weather', {'city': 'Paris', 'unit': unit})], usage=usage)
    if step == 1 and thorough:
        return ModelResponse(parts=[ToolCallPart('alerts', {'city': 'Paris'})], usage=usage)
    return ModelResponse(parts=[TextPart('Rain later; take an umbrella.' if thorough else 'Sunny.')], usage=usage)


def _agent(instructions: str) -> Agent[None, str]:
    agent = Agent(output_type=str, instructions=instructions)

    @agent.tool_plain
    def weather(city: str, unit: str) -> str:
        """Weather."""
        return f'14 {unit}'

    @agent.tool_plain
    def alerts(city: str) -> list[str]:
        """Alerts."""
        return ['rain']

    return agent


async def _record(path: Path, instructions: str) -> None:
    await _agent(instructions).run('Paris?', model=CassetteModel(FunctionModel(_model), cassette=path, mode='all'))


async def test_a_diff_of_two_recordings_after_a_prompt_change_names_what_changed(tmp_path: Path) -> None:
    before, after = tmp_path / 'before.json', tmp_path / 'after.json'
    await _record(before, 'Answer.')
    await _record(after, 'Answer; be thorough.')
    diff = diff_runs(before, after)
    assert diff.changes == [
        'tool call \'weather\' changed: unit: "C" before, "F" after',
        'tool call added: alerts({"city":"Paris"})',
        '1 request(s) added: 2 -> 3',
        'text changed: "Sunny." before, "Rain later; take an umbrella." after',
    ]
    assert (diff.requests, diff.tokens) == ((2, 3), (30, 75))
    assert not diff.same
    assert diff_runs(before, before).same


async def test_the_cli_prints_the_diff_and_the_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = tmp_path / 'before.json', tmp_path / 'after.json'
    await _record(before, 'Answer.')
    await _record(after, 'Answer; be thorough.')
    assert main(['cassette', 'diff', str(before), str(after)]) == 1  # a difference, for CI to gate on
    out = capsys.readouterr().out
    assert 'tool call added: alerts({"city":"Paris"})' in out
    assert 'tokens: 30 -> 75' in out
    assert main(['cassette', 'show', str(after)]) == 0
    out = capsys.readouterr().out
    assert '1. weather({"city":"Paris","unit":"F"})' in out
    assert "3. 'Rain later; take an umbrella.'" in out
    assert 'tokens: 60 in, 15 out' in out
    assert 'cost: unknown' in out  # a FunctionModel has no price


def test_a_cassette_command_on_a_missing_file_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(['cassette', 'show', str(tmp_path / 'nope.json')]) == 1
    err = capsys.readouterr().err
    assert err.startswith('agentool: error: cassette')
    assert err.count('\n') == 1


async def test_a_mismatch_deep_in_a_tool_result_shows_both_values_and_names_cassette_tools(tmp_path: Path) -> None:
    path, ids = tmp_path / 'c.json', itertools.count(1)
    agent = Agent(output_type=str)

    @agent.tool_plain
    def create_order() -> dict[str, object]:
        """Creates an order (a new id each run)."""
        return {'note': 'n' * 400, 'order_id': next(ids)}

    await agent.run('order', model=CassetteModel(call_then_answer('create_order', {}), cassette=path, mode='once'))
    with override_allow_model_requests(False), pytest.raises(CassetteMismatchError) as caught:
        await agent.run('order', model=CassetteModel(None, cassette=path))
    (change,) = caught.value.details['changes']
    assert change.startswith("only the result of tool 'create_order' differs:")
    assert '"order_id": 1}' in change  # the difference, 400 characters in, kept in view on both sides
    assert '"order_id": 2}' in change
    assert len(change) < 600
    assert 'CassetteTools' in str(caught.value)
    assert 'Re-record' not in str(caught.value)


def test_show_escapes_control_characters_and_names_a_corrupt_response(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / 'c.json'

    def sneaky(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('\x1b[2Jcleared')])

    sneaky_model = FunctionModel(sneaky, model_name='\x1b[31mred')
    Agent(output_type=str).run_sync('hi', model=CassetteModel(sneaky_model, cassette=path, mode='once'))
    assert main(['cassette', 'show', str(path)]) == 0
    out = capsys.readouterr().out
    assert '\x1b' not in out
    assert '\\x1b[2Jcleared' in out
    assert 'model \\x1b[31mred' in out
    cassette = Cassette.load(path)
    cassette.exchanges[0].response['parts'] = 'not parts'
    cassette.save(path)
    assert main(['cassette', 'show', str(path)]) == 1
    assert capsys.readouterr().err.startswith(
        f'agentool: error: cassette {str(path)!r}: the cassette holds a response pydantic-ai cannot read'
    )


async def test_the_diff_escapes_characters_that_reorder_terminal_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A right-to-left override (U+202E) makes a terminal show the rest of the line reversed.
    paths: list[Path] = []
    for name, text in (('a', 'hello'), ('b', 'hel\u202elp')):
        model = FunctionModel(lambda messages, info, text=text: ModelResponse(parts=[TextPart(text)]))
        paths.append(tmp_path / f'{name}.json')
        await Agent(output_type=str).run('hi', model=CassetteModel(model, cassette=paths[-1], mode='once'))
    assert main(['cassette', 'diff', *map(str, paths)]) == 1
    out = capsys.readouterr().out
    assert '\u202e' not in out
    assert 'hel\\u202elp' in out
