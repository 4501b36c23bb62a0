"""Assertions and diffs that hold on every source: a run, its cassette, a double, a recording.

A failure lists every call (each argument bounded) and the side-by-side table; outputs compare
in one canonical form; output tools are the output wherever they are read; a toolset's recorded
id replays through any stand-in; `.calls` fill while recording as on replay; recorded runs keep
their tool results; a schema change is named by its properties.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput, ToolOutput
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import Tool

from agentool.errors import CassetteMismatchError, ExpectationError
from agentool.testing import (
    AgentDouble,
    Call,
    Cassette,
    CassetteModel,
    CassetteTools,
    CassetteToolset,
    Output,
    Recorder,
    Recording,
    Replay,
    Script,
    ToolsetDouble,
    diff_runs,
    trajectory,
)


class City(BaseModel):
    name: str
    temp: float


def _weather_agent(output_type: Any) -> Agent[None, Any]:
    agent = Agent(output_type=output_type)

    @agent.tool_plain
    def weather(city: str, unit: str) -> str:
        """The weather in a city."""
        return f'sunny in {city[:10]}'

    return agent


def _answers(first_city: str) -> FunctionModel:
    """Looks up `first_city`, then Rome, then answers through whichever output the agent asks for."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < 2:
            city = first_city if step == 0 else 'Rome'
            return ModelResponse(parts=[ToolCallPart('weather', {'city': city, 'unit': 'C'})])
        if info.output_tools:
            tool = info.output_tools[0]
            value: Any = 5 if tool.outer_typed_dict_key else {'name': 'Rome', 'temp': 21}
            args = {tool.outer_typed_dict_key: value} if tool.outer_typed_dict_key else value
            return ModelResponse(parts=[ToolCallPart(tool.name, args)])
        return ModelResponse(parts=[TextPart('{"name": "Rome", "temp": 21}')])

    return FunctionModel(answer)


async def test_a_failure_lists_every_call_bounded_then_the_table(tmp_path: Path) -> None:
    result = await _weather_agent(str).run('go', model=_answers('x' * 12_000 + 'END'))
    with pytest.raises(ExpectationError) as caught:
        trajectory(result).assert_called('weather', {'city': 'Oslo'})
    text = str(caught.value)
    assert 'message cut' not in text
    assert len(text) < 2000
    first, table = text.split('\n', 1)
    assert '... (12,005 characters)' in first  # the long argument bounded, its length stated
    assert 'weather({"city":"Rome","unit":"C"})' in first  # the calls after it still listed
    assert re.search(r'expected +\| actual', table)
    assert '| 2. weather({"city":"Rome","unit":"C"})' in table


def test_a_failure_on_a_long_run_keeps_its_table_within_the_message() -> None:
    steps = [
        ModelResponse(parts=[ToolCallPart('weather', {'city': f'city {n}', 'note': 'n' * 500})]) for n in range(200)
    ]
    with pytest.raises(ExpectationError) as caught:
        trajectory(steps).assert_order('alerts')
    text = str(caught.value)
    assert 'message cut' not in text
    assert re.search(r'expected +\| actual', text)
    assert re.search(r'\.\.\. \d+ more \(below\)', text.split('\n', 1)[0])
    assert re.search(r'\.\.\. \d+ more line\(s\)$', text)


async def test_the_actual_column_shows_every_argument_a_call_was_made_with() -> None:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def convert(value: float, from_unit: str, target_unit: str) -> str:
        """Converts a value."""
        return 'ok'

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            args = {'value': 3, 'from_unit': 'kilometres', 'target_unit': 'miles'}
            return ModelResponse(parts=[ToolCallPart('convert', args)])
        return ModelResponse(parts=[TextPart('1.86 miles')])

    result = await agent.run('3 km in miles?', model=FunctionModel(answer))
    with pytest.raises(ExpectationError) as caught:
        trajectory(result).assert_called('convert', {'to_unit': 'miles'})
    row = next(line for line in str(caught.value).splitlines() if '| 1.' in line)
    # The argument that differs from the expectation is past column 48: it shows whole.
    assert row.endswith('1. convert({"value":3,"from_unit":"kilometres","target_unit":"miles"})')


@pytest.mark.parametrize(
    'output_type',
    [City, ToolOutput(City, name='emit'), int, NativeOutput(City), str],
    ids=['tool', 'named-tool', 'wrapped', 'native', 'text'],
)
async def test_a_run_and_its_own_cassette_diff_empty(tmp_path: Path, output_type: Any) -> None:
    path = tmp_path / 'c.json'
    agent = _weather_agent(output_type)
    result = await agent.run('go', model=CassetteModel(_answers('Paris'), cassette=path, mode='once'))
    diff = diff_runs(result, path)
    assert diff.changes == []
    assert diff_runs(path, result).same
    for source in (result, path):
        found = trajectory(source)
        found.assert_output(result.output)
        found.assert_not_called('emit')
        assert [call.tool for call in found.calls] == ['weather', 'weather']


async def test_a_named_output_tool_is_the_output_of_a_run_not_a_call() -> None:
    result = await _weather_agent(ToolOutput(City, name='emit')).run('go', model=_answers('Paris'))
    found = trajectory(result)
    found.assert_not_called('emit')
    assert found.steps[-1].calls == ()
    assert found.steps[-1].describe() == '3. output {"name":"Rome","temp":21}'
    found.assert_output({'name': 'Rome', 'temp': 21.0})  # the typed output, in its JSON form


async def test_a_double_has_its_output_and_steps_with_the_calls_each_made() -> None:
    double = AgentDouble(Script(Call('weather', {'city': 'Oslo', 'unit': 'C'}), Output(City(name='Oslo', temp=2))))
    result = await _weather_agent(City).run('Oslo?', model=double)
    found = trajectory(double)
    found.assert_output(result.output)
    found.assert_output({'name': 'Oslo', 'temp': 2})
    assert found.describe() == [
        '1. weather({"city":"Oslo","unit":"C"})',
        '2. output {"name":"Oslo","temp":2.0}',
        "output: {'name': 'Oslo', 'temp': 2.0}",
    ]
    assert found.steps[0].calls[0].result == 'sunny in Oslo'
    with pytest.raises(ExpectationError, match='gave another output'):
        found.assert_output({'name': 'Bergen', 'temp': 2})


def _adds(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls `add(2, 3)`, then answers '5'."""
    if len(messages) == 1:
        return ModelResponse(parts=[ToolCallPart('add', {'a': 2, 'b': 3})])
    return ModelResponse(parts=[TextPart('5')])


async def _record_adds(path: Path, server: Any) -> CassetteToolset:
    """Records `2 + 3?` answered through `server`; the recording toolset."""
    model = CassetteModel(FunctionModel(_adds), cassette=path, mode='once')
    recording = CassetteToolset(server, model)
    await Agent(output_type=str).run('2 + 3?', model=model, toolsets=[recording])
    return recording


async def _replay_through_a_stand_in(path: Path) -> CassetteToolset:
    """Replays `2 + 3?` offline, the toolset `calc` an empty stand-in; the stand-in's toolset."""
    replay_model = CassetteModel(None, cassette=path)
    offline = CassetteToolset(ToolsetDouble({}), replay_model, name='calc')
    with override_allow_model_requests(False):
        assert (await Agent(output_type=str).run('2 + 3?', model=replay_model, toolsets=[offline])).output == '5'
    return offline


async def test_a_toolset_recorded_with_an_id_replays_through_a_stand_in(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    schema = {'type': 'object', 'properties': {'a': {}, 'b': {}}}
    server = ToolsetDouble({'add': schema}, answers={'add': lambda args: args['a'] + args['b']}, id='calc')
    recording = await _record_adds(path, server)
    recording.calls.assert_called('add', {'a': 2, 'b': 3})  # filled while recording, as on replay
    assert recording.calls[0].result == 5
    offline = await _replay_through_a_stand_in(path)
    offline.calls.assert_called('add', {'a': 2, 'b': 3})
    assert offline.calls[0].result == 5


async def test_a_cassette_recorded_before_toolset_ids_were_kept_replays_through_a_stand_in(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await _record_adds(path, ToolsetDouble({'add': {'type': 'object'}}, answers={'add': 5}, id='calc'))
    older = Cassette.load(path)
    older.toolsets['calc'] = [{k: v for k, v in d.items() if k != 'toolset_id'} for d in older.toolsets['calc']]
    older.save(path)  # as written before: the id only in the recorded requests
    await _replay_through_a_stand_in(path)


async def test_an_mcp_server_recorded_with_its_id_replays_through_a_stand_in(tmp_path: Path) -> None:
    fastmcp = pytest.importorskip('fastmcp')
    from pydantic_ai.mcp import MCPToolset

    app = fastmcp.FastMCP('calc')

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    await _record_adds(tmp_path / 'c.json', MCPToolset(app, id='calc'))
    offline = await _replay_through_a_stand_in(tmp_path / 'c.json')
    offline.calls.assert_called('add', {'a': 2, 'b': 3})


async def test_cassette_tools_log_calls_while_recording_as_on_replay(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    agent = _weather_agent(str)
    model = CassetteModel(_answers('Paris'), cassette=path, mode='once')
    recording = CassetteTools(model)
    await agent.run('go', model=model, capabilities=[recording])
    replay = Replay(path)
    with override_allow_model_requests(False):
        await agent.run('go', model=replay.model, capabilities=[replay])
    for tools in (recording, replay):
        tools.calls.assert_order(('weather', {'city': 'Paris'}), ('weather', {'city': 'Rome'}))
        assert [call.result for call in tools.calls] == ['sunny in Paris', 'sunny in Rome']


async def test_a_recording_loads_with_each_runs_tool_results(tmp_path: Path) -> None:
    path = tmp_path / 'runs.json'
    agent = _weather_agent(str)
    recorder = Recorder(path)
    with agent.override(model=_answers('Paris')):
        await agent.run('first', capabilities=[recorder])
        await agent.run('second', capabilities=[recorder])
    recorder.calls.assert_called('weather', times=4)  # a Recorder logs what it records
    loaded = Recording.load(path)
    for run in (*loaded.runs, *recorder.recording.runs):
        assert [(call.args['city'], call.result) for call in run.tool_calls] == [
            ('Paris', 'sunny in Paris'),
            ('Rome', 'sunny in Rome'),
        ]
    loaded.save(path)  # the results stay in the one list, not copied per run
    again = Recording.load(path)
    assert len(again.tool_calls) == 4
    assert again.runs[1].tool_calls == loaded.runs[1].tool_calls


def _converter(unit_field: str) -> Agent[None, str]:
    """An agent whose `convert` tool takes `value`, `from_unit` and `unit_field`."""

    def convert(**args: Any) -> str:
        return 'ok'

    schema = {
        'type': 'object',
        'properties': {
            'value': {'type': 'number', 'title': 'Value'},
            'from_unit': {'type': 'string', 'title': 'From Unit'},
            unit_field: {'type': 'string', 'title': unit_field.replace('_', ' ').title()},
        },
        'required': ['value', 'from_unit', unit_field],
    }
    tool = Tool.from_schema(convert, name='convert', description='Converts a value.', json_schema=schema)
    return Agent(output_type=str, tools=[tool])


async def test_a_schema_change_is_named_by_its_properties(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    model = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart('done')]))
    await _converter('to_unit').run('convert', model=CassetteModel(model, cassette=path, mode='once'))
    with override_allow_model_requests(False), pytest.raises(CassetteMismatchError) as caught:
        await _converter('target_unit').run('convert', model=CassetteModel(None, cassette=path))
    assert caught.value.details['changes'] == [
        "tool 'convert': schema changed: property `to_unit` removed, `target_unit` added"
    ]


async def test_a_changed_toolset_schema_is_named_by_its_properties(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    number = {'type': 'number'}
    before = ToolsetDouble({'add': {'type': 'object', 'properties': {'a': number, 'b': number}}}, answers={'add': 5})
    after = ToolsetDouble(
        {'add': {'type': 'object', 'properties': {'a': number, 'c': number}, 'required': ['a']}}, answers={'add': 5}
    )
    answer = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart('done')]))
    model = CassetteModel(answer, cassette=path, mode='once')
    await Agent(output_type=str).run('add', model=model, toolsets=[CassetteToolset(before, model)])
    replay_model = CassetteModel(None, cassette=path)
    with override_allow_model_requests(False), pytest.raises(CassetteMismatchError) as caught:
        await Agent(output_type=str).run(
            'add', model=replay_model, toolsets=[CassetteToolset(after, replay_model, verify=True)]
        )
    assert caught.value.details['changes'] == [
        "tool 'add': schema changed: property `b` removed, `c` added; `a` now required"
    ]
