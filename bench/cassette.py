"""Cassette replay: recorded runs answered by `CassetteModel` vs the same runs by `FunctionModel`,
and vs cassetter (an HTTP cassette library) replaying the same `OpenAIChatModel` run.

The short run is a plain pydantic-ai agent with two tools: the model calls `geocode`, then
`weather`, then answers. It is recorded once (in memory) through a `FunctionModel`, then replayed
with no model behind the cassette (`wrapped=None`, mode `none`), against the same agent driven
directly by the same `FunctionModel`. What the replay adds is matching each request by its
fingerprint and rebuilding the recorded `ModelResponse`; the tools run on both sides. The long
run (30 requests, `bench.cassette_files`) is measured the same way: there, each message of the
history is viewed once, not at every request.

The provider-class run is the short one through `OpenAIChatModel` and the official SDK over a
mock HTTP transport, recorded to a file by `CassetteModel` and by cassetter (default matching),
then replayed from each file, loaded afresh per run, with no network.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool.testing import Cassette, CassetteModel

from ._table import Row, duration
from ._timing import Plan, Scale, ratio, samples
from .cassette_files import ANSWER as LONG_ANSWER
from .cassette_files import LONG_RUN, long_run_agent, long_run_script

__all__ = ('PROMPT', 'ANSWER', 'cassette_rows', 'run_weather', 'script', 'weather_agent')

PROMPT = 'What is the weather in Paris?'
ANSWER = 'Sunny, 21.5 C in Paris.'


async def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: geocode, then weather, then the answer (three requests)."""
    answered = sum(isinstance(message, ModelResponse) for message in messages)
    if answered == 0:
        return ModelResponse(parts=[ToolCallPart('geocode', {'city': 'Paris'}, tool_call_id='call_1')])
    if answered == 1:
        return ModelResponse(parts=[ToolCallPart('weather', {'lat': 48.85, 'lon': 2.35}, tool_call_id='call_2')])
    return ModelResponse(parts=[TextPart(ANSWER)])


def weather_agent(model: Model | None) -> Agent[None, str]:
    agent = Agent(model, output_type=str, instructions='Answer about the weather.')

    @agent.tool_plain
    def geocode(city: str) -> dict[str, float]:
        """Coordinates of a city."""
        return {'lat': 48.85, 'lon': 2.35}

    @agent.tool_plain
    def weather(lat: float, lon: float) -> dict[str, Any]:
        """The weather at coordinates."""
        return {'temp_c': 21.5, 'sky': 'sunny'}

    return agent


async def run_weather(agent: Agent[None, str]) -> str:
    output = (await agent.run(PROMPT)).output
    assert output == ANSWER
    return output


async def cassette_rows(scale: Scale) -> list[Row]:
    """Replaying the recorded run vs scripting it with `FunctionModel`, repeat by repeat."""
    cassette = Cassette()
    await run_weather(weather_agent(CassetteModel(FunctionModel(script), cassette=cassette, mode='all')))
    assert len(cassette.exchanges) == 3
    replay = weather_agent(CassetteModel(None, cassette=cassette, mode='none'))
    scripted = weather_agent(FunctionModel(script))
    taken = await samples(
        {
            'replay': Plan(lambda: run_weather(replay), scale.run_loops),
            'function': Plan(lambda: run_weather(scripted), scale.run_loops),
        },
        max(3, scale.repeats),
        warmup=5,
    )
    row = ratio(taken, 'replay', 'function')
    return [
        Row(
            benchmark='Cassette replay of a recorded three-request run vs the same run scripted by `FunctionModel`',
            measured=f'{duration(row.subject)} vs {duration(row.baseline)}; per-repeat ratios {row.spread}',
            ratio=row.median,
            target=1.10,
            cause='each replayed request is normalised and hashed to find its exchange (its messages dumped; '
            "the tools and settings reused while equal to the last request's), and the recorded response is "
            'validated back into a `ModelResponse`: about 0.2 ms a request, the rest is the run itself.',
        ),
        await _long_run_row(scale),
    ]


async def _long_run_row(scale: Scale) -> Row:
    cassette = Cassette()
    recorder = CassetteModel(FunctionModel(long_run_script), cassette=cassette, mode='all')
    assert (await long_run_agent(recorder).run('Check the catalogue.')).output == LONG_ANSWER
    assert len(cassette.exchanges) == LONG_RUN
    replay = long_run_agent(CassetteModel(None, cassette=cassette, mode='none'))
    scripted = long_run_agent(FunctionModel(long_run_script))

    async def run(agent: Agent[None, str]) -> None:
        assert (await agent.run('Check the catalogue.')).output == LONG_ANSWER

    loops = max(1, scale.run_loops // 10)
    taken = await samples(
        {'replay': Plan(lambda: run(replay), loops), 'function': Plan(lambda: run(scripted), loops)},
        max(3, scale.repeats),
        warmup=2,
    )
    row = ratio(taken, 'replay', 'function')
    return Row(
        benchmark=f'Cassette replay of a recorded {LONG_RUN}-request run vs the same run scripted by `FunctionModel`',
        measured=f'{duration(row.subject)} vs {duration(row.baseline)}; per-repeat ratios {row.spread}',
        ratio=row.median,
        target=1.20,
        cause='each message is viewed for its fingerprint once, not at every request (its view is kept beside '
        'a deep copy that tells a message changed in place); each request still dumps its new messages, copies '
        'them and hashes the whole view.',
    )


if __name__ == '__main__':
    import asyncio

    from ._table import render_markdown

    print(render_markdown(asyncio.run(cassette_rows(Scale()))), end='')
