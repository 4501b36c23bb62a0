"""`CassetteModel`: record any model once, replay offline; every part kind and run mode.

Cassette modes, drift diffs, concurrency, redaction and the cassette file's boundary.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ModelRetry
from pydantic_ai.capabilities import NativeTool
from pydantic_ai.messages import (
    BinaryContent,
    FilePart,
    ModelMessage,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.native_tools import WebSearchTool
from pydantic_ai.output import NativeOutput, PromptedOutput, ToolOutput
from pydantic_ai.usage import RequestUsage

from agentool.errors import CassetteError, CassetteMismatchError
from agentool.testing import Cassette, CassetteModel, Recording, Replay
from tests._cassette_stable import stable
from tests.agentools import call_then_answer

pytestmark = pytest.mark.seam  # CassetteModel is a pydantic-ai WrapperModel: the matrix runs it on every release

_T = TypeVar('_T')


class City(BaseModel):
    name: str
    population: int


def _offline() -> Any:
    """No model request may leave the process while replaying."""
    return override_allow_model_requests(False)


async def _record_and_replay(run: Callable[[CassetteModel], Awaitable[_T]], model: Model, path: Path) -> tuple[_T, _T]:
    """`run` once recording `model` into `path`, then again replaying it with no model request allowed."""
    recorded = await run(CassetteModel(model, cassette=path, mode='once'))
    with _offline():
        return recorded, await run(CassetteModel(None, cassette=path))


async def _round_trip(
    agent: Agent[Any, Any], model: Model, path: Path, prompt: Any = 'go', **run: Any
) -> tuple[Any, Any]:
    """Record `agent` on `model`, replay with no wrapped model; both results."""
    recorded, replayed = await _record_and_replay(
        lambda cassette: agent.run(prompt, model=cassette, **run), model, path
    )
    assert replayed.output == recorded.output
    assert stable(replayed.all_messages()) == stable(recorded.all_messages())
    return recorded, replayed


async def test_tool_calls_and_retries_replay(tmp_path: Path) -> None:
    agent = Agent(output_type=str)
    calls: list[int] = []

    @agent.tool_plain
    def double(x: int) -> int:
        calls.append(x)
        if x < 0:
            raise ModelRetry('x must be positive')
        return x * 2

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = len(messages)
        if n == 1:
            return ModelResponse(parts=[ToolCallPart('double', {'x': -1})])
        if n == 3:
            return ModelResponse(parts=[ToolCallPart('double', {'x': 3})])
        return ModelResponse(parts=[TextPart('six')], usage=RequestUsage(input_tokens=7, output_tokens=1))

    recorded, replayed = await _round_trip(agent, FunctionModel(model), tmp_path / 'c.json')
    assert replayed.output == 'six'
    assert calls == [-1, 3, -1, 3]  # the tools still run on replay: only the model is replayed
    assert replayed.usage.input_tokens == recorded.usage.input_tokens


async def test_test_model_with_tools_replays(tmp_path: Path) -> None:
    agent = Agent(output_type=str, instructions='Be brief.')

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    _, replayed = await _round_trip(agent, TestModel(), tmp_path / 'c.json')
    assert replayed.output == '{"add":0}'


async def test_thinking_builtin_and_file_parts_replay(tmp_path: Path) -> None:
    agent = Agent(output_type=str)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[
                ThinkingPart('let me think', signature='sig-1', provider_name='function'),
                NativeToolCallPart('web_search', {'query': 'paris'}, tool_call_id='b1', provider_name='function'),
                NativeToolReturnPart('web_search', {'hits': 3}, tool_call_id='b1', provider_name='function'),
                FilePart(BinaryContent(b'\x89PNG\r\n', media_type='image/png')),
                TextPart('Paris'),
            ],
            model_name='real-model-1',
            provider_name='realprovider',
            finish_reason='stop',
            usage=RequestUsage(input_tokens=11, output_tokens=5),
        )

    _, replayed = await _round_trip(agent, FunctionModel(model), tmp_path / 'c.json')
    response = replayed.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert [type(part).__name__ for part in response.parts] == [
        'ThinkingPart',
        'NativeToolCallPart',
        'NativeToolReturnPart',
        'FilePart',
        'TextPart',
    ]
    assert (response.provider_name, response.finish_reason) == ('realprovider', 'stop')
    assert response.usage.input_tokens == 11


def _answer(value: dict[str, Any]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.output_tools:
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, value)])
        return ModelResponse(parts=[TextPart(json.dumps(value))])

    return FunctionModel(model)


@pytest.mark.parametrize(
    'output_type',
    [City, ToolOutput(City, name='city'), NativeOutput(City), PromptedOutput(City)],
    ids=['default', 'tool_output', 'native_output', 'prompted_output'],
)
async def test_structured_outputs_replay(tmp_path: Path, output_type: Any) -> None:
    agent = Agent(output_type=output_type)
    _, replayed = await _round_trip(agent, _answer({'name': 'Paris', 'population': 2}), tmp_path / 'c.json')
    assert replayed.output == City(name='Paris', population=2)


async def test_output_function_replays(tmp_path: Path) -> None:
    def shout(name: str, population: int) -> str:
        return f'{name.upper()}:{population}'

    agent = Agent(output_type=shout)
    _, replayed = await _round_trip(agent, _answer({'name': 'Paris', 'population': 2}), tmp_path / 'c.json')
    assert replayed.output == 'PARIS:2'


async def test_deferred_approval_and_continuation_replay(tmp_path: Path) -> None:
    agent = Agent(output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        return f'deleted {path}'

    async def both(cassette: CassetteModel) -> tuple[Any, Any]:
        first = await agent.run('delete /a', model=cassette)
        assert isinstance(first.output, DeferredToolRequests)
        results = DeferredToolResults(approvals={first.output.approvals[0].tool_call_id: True})
        second = await agent.run(model=cassette, message_history=first.all_messages(), deferred_tool_results=results)
        return first, second

    model = call_then_answer('delete', {'path': '/a'})
    recorded, replayed = await _record_and_replay(both, model, tmp_path / 'c.json')
    assert replayed[1].output == recorded[1].output == 'deleted /a'
    assert stable(replayed[1].all_messages()) == stable(recorded[1].all_messages())


async def test_message_history_continuation_replays(tmp_path: Path) -> None:
    agent = Agent(output_type=str)

    async def conversation(cassette: CassetteModel) -> Any:
        first = await agent.run('hello', model=cassette)
        return await agent.run('and again', model=cassette, message_history=first.all_messages())

    model = TestModel(custom_output_text='ok')
    recorded, replayed = await _record_and_replay(conversation, model, tmp_path / 'c.json')
    assert stable(replayed.all_messages()) == stable(recorded.all_messages())
    assert len(replayed.all_messages()) == 4


def _streaming_model() -> FunctionModel:
    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content='hmm')}
            yield {1: DeltaToolCall(name='lookup', json_args='{"city": ')}
            yield {1: DeltaToolCall(json_args='"Paris"}')}
            return
        for chunk in ('It is ', 'sunny ', 'in Paris.'):
            yield chunk

    return FunctionModel(stream_function=stream)


def _streaming_agent() -> Agent[None, str]:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def lookup(city: str) -> str:
        return f'{city}: sunny'

    return agent


async def test_run_stream_replays_the_recorded_deltas(tmp_path: Path) -> None:
    agent = _streaming_agent()

    async def deltas(model: CassetteModel) -> tuple[list[str], Any]:
        async with agent.run_stream('weather?', model=model) as stream:
            chunks = [chunk async for chunk in stream.stream_text(delta=True, debounce_by=None)]
        return chunks, stream

    (recorded, live), (replayed, again) = await _record_and_replay(deltas, _streaming_model(), tmp_path / 'c.json')
    assert replayed == recorded == ['It is ', 'sunny ', 'in Paris.']
    assert stable(again.all_messages()) == stable(live.all_messages())


async def test_run_stream_events_replays_the_event_sequence(tmp_path: Path) -> None:
    agent = _streaming_agent()

    async def events(model: CassetteModel) -> list[Any]:
        seen: list[Any] = []
        async with agent.run_stream_events('weather?', model=model) as stream:
            async for event in stream:
                seen.append(_stable_event(event))
        return seen

    recorded, replayed = await _record_and_replay(events, _streaming_model(), tmp_path / 'c.json')
    assert replayed == recorded
    kinds = [event[0] for event in replayed]
    assert {'part_delta', 'function_tool_call', 'agent_run_result'} <= set(kinds)


def _stable_event(event: Any) -> Any:
    kind = getattr(event, 'event_kind', type(event).__name__)
    if kind == 'agent_run_result':
        return (kind, event.result.output)
    if kind in ('part_start', 'part_delta', 'part_end'):
        return (kind, event.index, repr(getattr(event, 'part', None) or getattr(event, 'delta', None)))
    if kind == 'function_tool_call':
        return (kind, event.part.tool_name, event.part.args)
    if kind == 'function_tool_result':
        return (kind, getattr(event, 'part', None) and event.part.content)
    return (kind,)


async def test_iter_node_streams_replay(tmp_path: Path) -> None:
    agent = _streaming_agent()

    async def walk(model: CassetteModel) -> list[Any]:
        seen: list[Any] = []
        async with agent.iter('weather?', model=model) as run:
            async for node in run:
                if Agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as stream:
                        seen.extend([_stable_event(event) async for event in stream])
        assert run.result is not None
        seen.append(run.result.output)
        return seen

    recorded, replayed = await _record_and_replay(walk, _streaming_model(), tmp_path / 'c.json')
    assert replayed == recorded
    assert replayed[-1] == 'It is sunny in Paris.'


async def test_a_non_streamed_recording_replays_as_a_stream(tmp_path: Path) -> None:
    agent, path = Agent(output_type=str), tmp_path / 'c.json'
    await agent.run('hi', model=CassetteModel(TestModel(custom_output_text='hello there'), cassette=path, mode='once'))
    with _offline():
        async with agent.run_stream('hi', model=CassetteModel(None, cassette=path)) as stream:
            assert await stream.get_output() == 'hello there'


async def test_native_tools_and_binary_prompts_replay(tmp_path: Path) -> None:
    agent = Agent(output_type=str, capabilities=[NativeTool(WebSearchTool())])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools = [tool.kind for tool in info.model_request_parameters.native_tools]
        return ModelResponse(parts=[TextPart(f'saw {tools}')])

    image = BinaryContent(b'\x89PNG\r\n\x1a\n', media_type='image/png')
    path = tmp_path / 'c.json'
    recorded, _ = await _round_trip(agent, FunctionModel(model), path, ['What is this?', image])
    assert recorded.output == "saw ['web_search']"
    # Stored inline (base64), so a changed image is a changed request.
    other = ['What is this?', BinaryContent(b'GIF89a', media_type='image/gif')]
    with _offline(), pytest.raises(CassetteMismatchError, match='user prompt changed'):
        await agent.run(other, model=CassetteModel(None, cassette=path))


class _Entered(FunctionModel):
    """A model that counts how often it is entered and exited (its HTTP client's lifetime)."""

    def __init__(self) -> None:
        super().__init__(lambda messages, info: ModelResponse(parts=[TextPart('hello')]), model_name='entered')
        self.entered = self.exited = 0

    async def __aenter__(self) -> _Entered:
        self.entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        self.exited += 1
        return None


async def test_a_cassette_model_is_a_wrapper_model_around_the_real_one_or_a_stand_in(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', _Entered()
    recording = CassetteModel(real, cassette=path, mode='once')
    assert isinstance(recording, WrapperModel)
    assert recording.wrapped is real
    async with recording:  # the wrapped model's lifetime is the wrapper's (pydantic-ai's WrapperModel)
        assert (real.entered, real.exited) == (1, 0)
        await Agent(output_type=str).run('hi', model=recording)
    assert (real.entered, real.exited) == (1, 1)
    assert (recording.model_name, recording.system) == ('entered', 'function')
    # In replay the wrapped model is a stand-in named and profiled as the recorded model.
    replay = CassetteModel(None, cassette=path)
    assert isinstance(replay, WrapperModel)
    assert replay.wrapped is not real
    assert (replay.model_name, replay.system) == ('entered', 'function')
    assert replay.profile.get('supports_tools') == real.profile.get('supports_tools')
    with _offline():
        async with replay:
            assert (await Agent(output_type=str).run('hi', model=replay)).output == 'hello'
    with pytest.raises(CassetteError, match='wraps no model') as caught:
        await Agent(output_type=str).run('other', model=CassetteModel(None, cassette=path, mode='new_episodes'))
    assert caught.value.details['reason'] == 'no_model'


class _Shaping(FunctionModel):
    """A model whose own request preparation reshapes the tools, as a provider's wire format does."""

    def customize_request_parameters(self, model_request_parameters: ModelRequestParameters) -> ModelRequestParameters:
        tools = [
            replace(tool, description=f'{tool.description} (wire)') for tool in model_request_parameters.function_tools
        ]
        return replace(model_request_parameters, function_tools=tools)


async def test_a_wrapped_models_own_request_shaping_stays_out_of_the_fingerprint(tmp_path: Path) -> None:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def double(n: int) -> int:
        """Twice n."""
        return n * 2

    # The replay has no wrapped model to shape the request: it matches only if recording did not either.
    answer = call_then_answer('double', {'n': 2}).function
    assert answer is not None
    _, replayed = await _round_trip(agent, _Shaping(answer), tmp_path / 'c.json')
    assert replayed.output == '4'


class _PricedModel(Model):
    """A model genai-prices knows (gpt-4o from OpenAI), answering with reported usage."""

    @property
    def model_name(self) -> str:
        return 'gpt-4o'

    @property
    def system(self) -> str:
        return 'openai'

    async def request(
        self, messages: list[ModelMessage], model_settings: Any, model_request_parameters: ModelRequestParameters
    ) -> ModelResponse:
        usage = RequestUsage(input_tokens=1000, output_tokens=100)
        return ModelResponse(parts=[TextPart('hi')], model_name='gpt-4o', provider_name='openai', usage=usage)


async def test_a_replay_reports_the_recorded_cost(tmp_path: Path) -> None:
    path = tmp_path / 'priced.json'
    live = await Agent().run('x', model=CassetteModel(_PricedModel(), cassette=path, mode='once'))
    assert live.usage.cost is not None
    replayed = await Agent().run('x', model=CassetteModel(None, cassette=path))
    assert replayed.usage.cost == live.usage.cost
    # The cost is kept as recorded, not priced again on replay (prices change; a cassette does not).
    text = path.read_text()
    path.write_text(text.replace(f'"cost": "{live.usage.cost}"', '"cost": "1.25"'))
    again = await Agent().run('x', model=CassetteModel(None, cassette=path))
    assert str(again.usage.cost) == '1.25'


def _steps(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Four tool calls, then the answer: a history long enough for replay to keep its views."""
    calls = sum(isinstance(message, ModelResponse) for message in messages) % 5
    if calls < 4:
        return ModelResponse(parts=[ToolCallPart('step', {'n': calls, 'tags': ['a']})])
    return ModelResponse(parts=[TextPart('done')])


def _stepper() -> Agent[None, str]:
    agent = Agent(output_type=str)

    @agent.tool_plain
    def step(n: int, tags: list[str]) -> int:
        return n

    return agent


async def test_a_history_changed_in_place_is_matched_as_it_is_now(tmp_path: Path) -> None:
    # A long history is viewed once per message; a message edited in place must be viewed again.
    path, agent = tmp_path / 'long.json', _stepper()
    model = CassetteModel(FunctionModel(_steps), cassette=path, mode='once')
    first = await agent.run('go', model=model)
    await agent.run('again', model=model, message_history=first.all_messages())
    replay = CassetteModel(None, cassette=path)
    history = (await agent.run('go', model=replay)).all_messages()
    assert len(history) == 10
    assert (await agent.run('again', model=replay, message_history=history)).output == 'done'
    assert (await agent.run('again', model=replay, message_history=history)).output == 'done'
    call = history[1].parts[0]
    assert isinstance(call, ToolCallPart)
    assert isinstance(call.args, dict)
    tags = cast('dict[str, list[str]]', call.args)['tags']
    tags.append('edited')  # deep inside the message, the same objects all along
    with pytest.raises(CassetteMismatchError, match='edited'):
        await agent.run('again', model=replay, message_history=history)


class Counting:
    """A `FunctionModel` that echoes the last user prompt and counts its calls."""

    def __init__(self, prefix: str = 'echo') -> None:
        self.calls = 0
        self.prefix = prefix
        self.model = FunctionModel(self.answer)

    def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        prompt = messages[-1].parts[-1].content  # pyright: ignore
        return ModelResponse(parts=[TextPart(f'{self.prefix}: {prompt} #{self.calls}')])


def _agent(**kwargs: Any) -> Agent[None, str]:
    agent = Agent(output_type=str, **kwargs)

    @agent.tool_plain
    def lookup(city: str) -> str:
        """Find a city."""
        return city

    return agent


async def test_once_records_when_missing_then_replays(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', Counting()
    first = await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    second = await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    assert first.output == second.output == 'echo: a #1'
    assert real.calls == 1  # the second run replayed although it could have called the model
    data = json.loads(path.read_text())
    assert (data['format'], data['version'], len(data['exchanges'])) == ('agentool-cassette', 2, 1)


async def test_none_refuses_a_missing_cassette(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='does not exist; record it first') as caught:
        CassetteModel(None, cassette=tmp_path / 'missing.json')
    assert caught.value.details['reason'] == 'missing'
    assert isinstance(caught.value, AssertionError)  # a test failure, for pytest


async def test_new_episodes_replays_matches_and_records_the_rest(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    model = CassetteModel(real.model, cassette=path, mode='new_episodes')
    assert (await _agent().run('a', model=model)).output == 'echo: a #1'
    assert (await _agent().run('b', model=model)).output == 'echo: b #2'
    assert real.calls == 2
    assert len(Cassette.load(path).exchanges) == 2
    with override_allow_model_requests(False):
        replay = CassetteModel(None, cassette=path)
        assert (await _agent().run('b', model=replay)).output == 'echo: b #2'


async def test_all_rerecords_and_replaces(tmp_path: Path) -> None:
    path, real = tmp_path / 'c.json', Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    await _agent().run('b', model=CassetteModel(real.model, cassette=path, mode='all'))
    assert real.calls == 2
    exchanges = Cassette.load(path).exchanges
    assert [e.request['messages'][0]['parts'][-1]['content'] for e in exchanges] == ['b']


async def test_recording_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='wraps no model') as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=tmp_path / 'c.json', mode='once'))
    assert caught.value.details['reason'] == 'no_model'


def test_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="unknown cassette mode 'sometimes'"):
        CassetteModel(None, cassette=tmp_path / 'c.json', mode='sometimes')  # type: ignore[arg-type]


async def _mismatch(tmp_path: Path, agent: Agent[None, str], prompt: str = 'a', **run: Any) -> CassetteMismatchError:
    path = tmp_path / 'c.json'
    if not path.exists():
        await _agent(system_prompt='You are terse.').run(
            'a', model=CassetteModel(Counting().model, cassette=path, mode='once')
        )
    with pytest.raises(CassetteMismatchError) as caught:
        await agent.run(prompt, model=CassetteModel(None, cassette=path), **run)
    return caught.value


async def test_drift_names_a_changed_tool_schema(tmp_path: Path) -> None:
    agent = Agent(output_type=str, system_prompt='You are terse.')

    @agent.tool_plain
    def lookup(city: str, country: str) -> str:
        """Find a city."""
        return city

    error = await _mismatch(tmp_path, agent)
    assert "tool 'lookup': schema changed" in str(error)
    assert 'country' in str(error)
    assert error.details['changes']
    assert len(str(error)) < 2000


async def test_drift_names_the_system_prompt_and_instructions(tmp_path: Path) -> None:
    error = await _mismatch(tmp_path, _agent(system_prompt='You are verbose.', instructions='Say hi.'))
    assert 'system prompt changed: ["You are terse."] recorded, ["You are verbose."] sent' in str(error)
    assert 'instructions changed' in str(error)


async def test_drift_names_the_user_prompt(tmp_path: Path) -> None:
    error = await _mismatch(tmp_path, _agent(system_prompt='You are terse.'), prompt='b')
    assert 'user prompt changed: ["a"] recorded, ["b"] sent' in str(error)


async def test_drift_names_the_number_of_messages_and_a_removed_tool(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    await _mismatch(tmp_path, _agent(system_prompt='You are terse.'), prompt='b')  # records 'a'
    history = (
        await _agent(system_prompt='You are terse.').run('a', model=CassetteModel(None, cassette=path))
    ).all_messages()
    agent = Agent(output_type=str, system_prompt='You are terse.')
    error = await _mismatch(tmp_path, agent, message_history=history)
    assert 'number of messages: 1 recorded, 3 sent' in str(error)
    assert "tool 'lookup' removed" in str(error)


async def test_several_agents_and_concurrent_runs_replay_deterministically(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    researcher, writer = _agent(system_prompt='research'), _agent(system_prompt='write')

    async def scene(model: CassetteModel) -> list[str]:
        runs = [researcher.run(p, model=model) for p in ('x', 'y')] + [writer.run(p, model=model) for p in ('x', 'y')]
        # The same request twice, concurrently: answered by occurrence, not by global order.
        runs += [writer.run('x', model=model)]
        return [r.output for r in await asyncio.gather(*runs)]

    def distinct_and_twins(outputs: list[str]) -> tuple[list[str], list[str]]:
        # Which of two identical concurrent requests the scheduler sends first is not fixed,
        # so the twins (runs 2 and 4) get the two recorded answers in either order.
        return [outputs[0], outputs[1], outputs[3]], sorted([outputs[2], outputs[4]])

    recorded = await scene(CassetteModel(Counting().model, cassette=path, mode='once'))
    assert len(set(recorded)) == 5  # every request recorded once, the twins included
    with override_allow_model_requests(False):
        replayed = await scene(CassetteModel(None, cassette=path))
        again = await scene(CassetteModel(None, cassette=path))
    assert distinct_and_twins(replayed) == distinct_and_twins(recorded)
    assert distinct_and_twins(again) == distinct_and_twins(recorded)


async def test_redaction_runs_before_writing_and_replay_still_matches(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'

    def redact(exchange: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(exchange).replace('sk-secret', '<redacted>')
        return json.loads(text)

    real = Counting()
    await _agent().run('key sk-secret', model=CassetteModel(real.model, cassette=path, mode='once', redact=redact))
    assert 'sk-secret' not in path.read_text()
    with override_allow_model_requests(False):
        result = await _agent().run('key sk-secret', model=CassetteModel(None, cassette=path))
    assert result.output == 'echo: key <redacted> #1'


async def test_in_memory_cassette(tmp_path: Path) -> None:
    cassette, real = Cassette(), Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=cassette, mode='new_episodes'))
    assert (await _agent().run('a', model=CassetteModel(None, cassette=cassette))).output == 'echo: a #1'
    assert real.calls == 1


def test_cassette_file_is_diff_friendly(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    asyncio.run(_agent().run('a', model=CassetteModel(Counting().model, cassette=path, mode='once')))
    text = path.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + '\n'
    assert 'timestamp' not in json.dumps(data['exchanges'][0]['request'])


@pytest.mark.parametrize(
    ('content', 'reason', 'message'),
    [
        (b'{not json', 'invalid_json', 'not UTF-8 JSON'),
        (b'\xff\xfe', 'invalid_json', 'not UTF-8 JSON'),
        (b'{"format": "agentool-cassette", "version": 3}', 'version', 'cassette version 3'),
        (b'{"format": "agentool-recording", "version": 2}', 'version', 'recording version 2'),
        (b'{"format": "agentool-tape", "version": 1}', 'invalid', 'is not an agentool cassette'),
        (b'{"format": "agentool-cassette", "version": 1, "exchanges": 3}', 'invalid', 'is not an agentool cassette'),
        (b'[1]', 'invalid', 'is not an agentool cassette'),
    ],
)
def test_a_bad_cassette_file_is_a_typed_error(tmp_path: Path, content: bytes, reason: str, message: str) -> None:
    path = tmp_path / 'c.json'
    path.write_bytes(content)
    with pytest.raises(CassetteError, match=message) as caught:
        Cassette.load(path)
    assert caught.value.details['reason'] == reason


_OPENERS: dict[str, Any] = {
    'Cassette.load': Cassette.load,
    'Recording.load': Recording.load,
    'Replay': Replay,
    'CassetteModel': lambda path: CassetteModel(None, cassette=path),
}


@pytest.mark.parametrize('opener', list(_OPENERS))
def test_an_oversized_cassette_is_refused_before_parsing(tmp_path: Path, opener: str) -> None:
    path = tmp_path / 'big.json'
    with path.open('wb') as stream:
        stream.truncate(65 * 1024 * 1024)  # sparse: its size is all that is read
    with pytest.raises(CassetteError, match='over the limit') as caught:
        _OPENERS[opener](path)
    assert caught.value.details['reason'] == 'too_large'


@pytest.mark.parametrize('opener', [*_OPENERS, 'Recording.save'])
def test_nul_in_the_path_is_typed(tmp_path: Path, opener: str) -> None:
    open_ = _OPENERS.get(opener, Recording().save)
    with pytest.raises(CassetteError, match='NUL') as caught:
        open_(str(tmp_path / 'a\x00b.json'))
    assert caught.value.details['reason'] == 'nul'


@pytest.mark.parametrize(
    'document',
    [
        Cassette.model_validate({'tool_calls': [{'tool': 't', 'args': {'x': '\ud800'}}]}),
        Recording.model_validate({'runs': [{'prompt': '\udc80', 'steps': [], 'tool_calls': []}]}),
    ],
    ids=['cassette', 'recording'],
)
def test_lone_surrogates_are_typed_and_nothing_is_written(tmp_path: Path, document: Cassette) -> None:
    with pytest.raises(CassetteError, match='UTF-8 cannot encode') as caught:
        document.save(tmp_path / 'c.json')
    assert caught.value.details['reason'] == 'unencodable'
    assert not (tmp_path / 'c.json').exists()


def test_an_unwritable_place_is_typed(tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('')
    with pytest.raises(CassetteError, match='cannot write cassette') as caught:
        Cassette().save(tmp_path / 'file' / 'c.json')
    assert caught.value.details['reason'] == 'unwritable'
    assert os.listdir(tmp_path) == ['file']


async def test_entering_the_cassette_model_enters_the_wrapped_one() -> None:
    real = _Entered()
    async with CassetteModel(real, cassette=Cassette(), mode='all') as model:
        assert (real.entered, real.exited) == (1, 0)
        assert (await _agent().run('a', model=model)).output == 'hello'
    assert (real.entered, real.exited) == (1, 1)


async def test_bad_arguments_are_typed(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match='wraps a pydantic-ai Model') as caught:
        CassetteModel(42, cassette=Cassette())  # type: ignore[arg-type]
    assert caught.value.details['reason'] == 'model'
    with pytest.raises(CassetteError, match='cannot make model'):
        CassetteModel('nosuchprovider:model', cassette=Cassette(), mode='all')
    with pytest.raises(CassetteError, match='redact must be a function'):
        CassetteModel(None, cassette=Cassette(), redact='yes')  # type: ignore[arg-type]
    with pytest.raises(CassetteError, match='path must be a non-empty str or Path'):
        CassetteModel(None, cassette=3)  # type: ignore[arg-type]
    model = CassetteModel(Counting().model, cassette=Cassette(), mode='all', redact=lambda e: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(CassetteError, match='redaction hook returned NoneType'):
        await _agent().run('a', model=model)


async def test_a_model_named_by_string_is_made_only_to_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Replay in CI: no provider key, so making 'openai:...' would fail; it is never made.
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    path, real = tmp_path / 'c.json', Counting()
    await _agent().run('a', model=CassetteModel(real.model, cassette=path, mode='once'))
    with override_allow_model_requests(False):
        for mode in ('none', 'once'):
            replay = CassetteModel('openai:gpt-5', cassette=path, mode=mode)
            # The wrapped model is a stand-in named as the recorded one, not the model named.
            assert (replay.model_name, replay.system) == ('function:answer:', 'function')
            assert not isinstance(replay.wrapped, FunctionModel)
            assert (await _agent().run('a', model=replay)).output == 'echo: a #1'
    with pytest.raises(CassetteError) as caught:  # recording does make it, and says why it cannot
        CassetteModel('openai:gpt-5', cassette=path, mode='all')
    assert caught.value.details['reason'] == 'model'


async def test_every_cassette_error_gives_the_path_as_text_in_details(tmp_path: Path) -> None:
    path = tmp_path / 'c.json'
    missing = tmp_path / 'missing.json'
    with pytest.raises(CassetteError) as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=missing))
    assert caught.value.details['path'] == str(missing)
    with pytest.raises(CassetteError) as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=path, mode='all'))
    assert caught.value.details['path'] == str(path)  # no model to record with
    mismatch = await _mismatch(tmp_path, _agent(), prompt='b')
    assert mismatch.details['path'] == str(path)
    with pytest.raises(CassetteMismatchError) as caught:
        await _agent().run('a', model=CassetteModel(None, cassette=Cassette()))
    assert caught.value.details['path'] is None  # in memory: no path
