"""Tool results replayed from a cassette are the type the tool returned, equal to the live value."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from agentool.errors import CassetteError
from agentool.testing import Cassette, CassetteModel, CassetteTools, CassetteToolset, Recorder, Replay
from tests._cassette_stable import stable


class Color(enum.Enum):
    RED = 'red'
    BLUE = 'blue'


class Reading(BaseModel):
    value: decimal.Decimal
    taken: datetime.datetime
    tags: tuple[str, ...]


@dataclasses.dataclass
class Box:
    size: tuple[int, int]
    label: bytes
    color: Color


class Login(BaseModel):
    user: str
    api_key: str
    since: datetime.date


UTC = datetime.UTC
RESULTS: dict[str, tuple[Any, Any]] = {
    'datetime': (datetime.datetime, datetime.datetime(2024, 5, 1, 12, 30, tzinfo=UTC)),
    'date': (datetime.date, datetime.date(2024, 5, 1)),
    'uuid': (uuid.UUID, uuid.UUID(int=7)),
    'decimal': (decimal.Decimal, decimal.Decimal('1.10')),
    'bytes': (bytes, b'plain text'),
    'binary': (bytes, b'\xff\x00\x80 raw'),
    'model': (Reading, Reading(value=decimal.Decimal('2.5'), taken=datetime.datetime(2024, 1, 2), tags=('a', 'b'))),
    'dataclass': (Box, Box(size=(3, 4), label=b'box', color=Color.BLUE)),
    'tuple': (tuple[int, str], (1, 'one')),
    'set': (set[int], {3, 1, 2}),
    'frozenset': (frozenset[int], frozenset({20, 10})),
    'enum': (Color, Color.RED),
}


def _calls(names: list[str]) -> Any:
    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(f'get_{name}', {}, tool_call_id=name) for name in names])
        return ModelResponse(parts=[TextPart('done')])

    return model


def _function(name: str, annotation: Any, value: Any) -> Any:
    def tool() -> Any:
        return value

    tool.__name__ = f'get_{name}'
    tool.__annotations__['return'] = annotation
    return tool


def _toolset(names: list[str], *, annotated: bool = True) -> FunctionToolset[Any]:
    toolset = FunctionToolset[Any]()
    for name in names:
        annotation, value = RESULTS[name]
        toolset.add_function(_function(name, annotation if annotated else Any, value))
    return toolset


def _same(replayed: Any, live: Any) -> bool:
    return type(replayed) is type(live) and replayed == live


def _results(calls: Any) -> dict[str, Any]:
    return {call.tool.removeprefix('get_'): call.result for call in calls}


async def test_cassette_tools_replay_each_result_as_the_type_the_tool_returned(tmp_path: Path) -> None:
    path, names = tmp_path / 'c.json', list(RESULTS)
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    recording = CassetteTools(model)
    live = await Agent().run('go', toolsets=[_toolset(names)], model=model, capabilities=[recording])
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        replay = CassetteTools(model)
        replayed = await Agent().run('go', toolsets=[_toolset(names)], model=model, capabilities=[replay])
    offline = _results(replay.calls)
    for name, (_, value) in RESULTS.items():
        assert _same(offline[name], value), name
    # The run that records logs what a replay gives, so one assertion holds on both.
    assert _results(recording.calls) == offline
    assert stable(replayed.all_messages()) == stable(live.all_messages())


async def test_the_cassette_notes_what_json_loses_and_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_calls(['bytes', 'binary', 'set', 'model'])), cassette=path, mode='once')
    await Agent().run(
        'go', toolsets=[_toolset(['bytes', 'binary', 'set', 'model'])], model=model, capabilities=[CassetteTools(model)]
    )
    written = {call['tool']: call for call in json.loads(path.read_text())['tool_calls']}
    assert written['get_bytes']['result'] == 'plain text'  # UTF-8 bytes stay text (and are scrubbed as text)
    assert written['get_bytes']['types'] == {'/result': 'bytes'}
    assert written['get_binary']['types'] == {'/result': 'base64'}
    assert written['get_set']['types'] == {'/result': 'set'}
    assert written['get_model']['annotated'] is True
    assert written['get_model']['types'] == {
        '/result/value': 'Decimal',
        '/result/taken': 'datetime',
        '/result/tags': 'tuple',
    }


async def test_recorder_and_replay_restore_the_types_too(tmp_path: Path) -> None:
    path, names = tmp_path / 'runs.json', ['datetime', 'model', 'dataclass', 'enum']
    agent, toolset = Agent(), _toolset(names)
    await agent.run('go', model=FunctionModel(_calls(names)), toolsets=[toolset], capabilities=[Recorder(path)])
    replay = Replay(path)
    with override_allow_model_requests(False):
        await agent.run('go', model=replay.model, toolsets=[toolset], capabilities=[replay])
    offline = _results(replay.calls)
    assert all(_same(offline[name], RESULTS[name][1]) for name in names)


async def test_a_cassette_toolset_over_functions_replays_their_types(tmp_path: Path) -> None:
    path, names = tmp_path / 'c.json', ['uuid', 'model', 'tuple']
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    await Agent().run('go', model=model, toolsets=[CassetteToolset(_toolset(names), model, name='fns')])
    with override_allow_model_requests(False):
        model = CassetteModel(None, cassette=path)
        offline = CassetteToolset(_toolset(names), model, name='fns')
        await Agent().run('go', model=model, toolsets=[offline])
    replayed = _results(offline.calls)
    assert all(_same(replayed[name], RESULTS[name][1]) for name in names)


async def test_without_a_return_annotation_a_class_replays_as_its_json(tmp_path: Path) -> None:
    # What only a class can rebuild needs the annotation; values of known kinds do not.
    path, names = tmp_path / 'c.json', ['model', 'datetime', 'tuple']
    model = CassetteModel(FunctionModel(_calls(names)), cassette=path, mode='once')
    await Agent().run(
        'go', toolsets=[_toolset(names, annotated=False)], model=model, capabilities=[CassetteTools(model)]
    )
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    await Agent().run('go', toolsets=[_toolset(names, annotated=False)], model=model, capabilities=[replay])
    replayed = _results(replay.calls)
    assert replayed['model'] == {
        'value': decimal.Decimal('2.5'),
        'taken': datetime.datetime(2024, 1, 2),
        'tags': ('a', 'b'),
    }
    assert _same(replayed['datetime'], RESULTS['datetime'][1])
    assert _same(replayed['tuple'], RESULTS['tuple'][1])


async def test_a_result_the_annotation_no_longer_fits_is_a_cassette_error(tmp_path: Path) -> None:
    # A cassette of runs (no request fingerprints, where a changed return schema shows first).
    path = tmp_path / 'runs.json'
    await Agent().run(
        'go', toolsets=[_toolset(['enum'])], model=FunctionModel(_calls(['enum'])), capabilities=[Recorder(path)]
    )
    changed = FunctionToolset[Any]()
    changed.add_function(_function('enum', decimal.Decimal, decimal.Decimal(1)))
    replay = Replay(path)
    with pytest.raises(CassetteError, match=r"tool 'get_enum'.*no longer fits the return annotation") as raised:
        await Agent().run('go', toolsets=[changed], model=replay.model, capabilities=[replay])
    assert raised.value.details['reason'] == 'result'
    assert raised.value.details['path'] == str(path)


async def test_a_scrubbed_secret_keeps_the_model_type(tmp_path: Path) -> None:
    def get_login() -> Login:
        return Login(user='ann', api_key='sk-' + 'a1B2' * 12, since=datetime.date(2020, 1, 1))

    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_calls(['login'])), cassette=path, mode='once')
    await Agent(tools=[get_login]).run('go', model=model, capabilities=[CassetteTools(model)])
    assert 'a1B2' not in path.read_text()
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    await Agent(tools=[get_login]).run('go', model=model, capabilities=[replay])
    (call,) = replay.calls
    assert type(call.result) is Login
    assert (call.result.user, call.result.since) == ('ann', datetime.date(2020, 1, 1))
    assert 'a1B2' not in call.result.api_key


async def test_a_set_of_text_replays_as_a_list_in_the_order_the_model_saw(tmp_path: Path) -> None:
    # Text hashes differ between processes: a rebuilt set could reorder what the next request holds.
    names = {f'name-{index}' for index in range(20)}

    def get_names() -> set[str]:
        return names

    path = tmp_path / 'c.json'
    model = CassetteModel(FunctionModel(_calls(['names'])), cassette=path, mode='once')
    await Agent(tools=[get_names]).run('go', model=model, capabilities=[CassetteTools(model)])
    written = Cassette.load(path).tool_calls[0]
    model = CassetteModel(None, cassette=path)
    replay = CassetteTools(model)
    await Agent(tools=[get_names]).run('go', model=model, capabilities=[replay])
    assert _results(replay.calls)['names'] == written.result
    assert set(written.result) == names


async def test_a_cassette_written_before_the_notes_replays_its_json_as_before() -> None:
    cassette = Cassette.model_validate({'tool_calls': [{'tool': 'get_date', 'args': {}, 'result': '2024-05-01'}]})
    replay = Replay(cassette)
    await Agent().run('go', toolsets=[_toolset(['date'])], model=FunctionModel(_calls(['date'])), capabilities=[replay])
    assert _results(replay.calls) == {'date': '2024-05-01'}
