"""`CassetteModel` beside cassetter, an HTTP cassette library, on the same `OpenAIChatModel` run.

The run is `bench.cassette`'s short one (geocode, weather, answer) through pydantic-ai's
`OpenAIChatModel` and the official OpenAI SDK, served by a mock HTTP transport answering as Chat
Completions would. It is recorded to a file by each library (cassetter with its default matching,
method and URI in order), then replayed by one agent from that file, loaded afresh per run (as a
test does):
cassetter under the SDK client it intercepts (built per run, over a transport that fails every
request), `CassetteModel` as the record-replay guide has a test replay, under the model's name
(`'openai:gpt-4o'`, a model never made, so no SDK client). Measured: replay time and file size.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from ._table import Row, duration, size
from ._timing import Plan, Scale, ratio, samples
from .cassette import ANSWER, PROMPT, weather_agent

__all__ = ('cassetter_rows',)

_TOOL_CALLS = [('geocode', {'city': 'Paris'}), ('weather', {'lat': 48.85, 'lon': 2.35})]


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions answer to a request: the next tool call, or the final text."""
    index = sum(message.get('role') == 'assistant' for message in body['messages'])
    message: dict[str, Any] = {'role': 'assistant', 'content': None}
    if index < len(_TOOL_CALLS):
        name, args = _TOOL_CALLS[index]
        function = {'name': name, 'arguments': json.dumps(args)}
        message['tool_calls'] = [{'id': f'call_{index}', 'type': 'function', 'function': function}]
    else:
        message['content'] = ANSWER
    return {
        'id': f'chatcmpl-{index}',
        'object': 'chat.completion',
        'created': 1_700_000_000 + index,
        'model': 'gpt-4o',
        'choices': [{'index': 0, 'message': message, 'finish_reason': 'stop' if message['content'] else 'tool_calls'}],
        'usage': {'prompt_tokens': 11, 'completion_tokens': 7, 'total_tokens': 18},
    }


def _openai_model(*, live: bool) -> Any:
    import httpx2
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def handle(request: httpx2.Request) -> httpx2.Response:
        if not live:
            raise AssertionError(f'a replay must not reach the network: {request.url}')
        return httpx2.Response(200, json=_answer(json.loads(request.content)))

    http_client = httpx2.AsyncClient(transport=httpx2.MockTransport(handle))
    client = AsyncOpenAI(api_key='test-key', base_url='https://openai.mock/v1', http_client=http_client, max_retries=0)
    return OpenAIChatModel('gpt-4o', provider=OpenAIProvider(openai_client=client))


async def cassetter_rows(scale: Scale) -> list[Row]:
    """Replay time and file size, `CassetteModel` vs cassetter; none when either is not installed."""
    try:
        import openai  # noqa: F401  # pyright: ignore[reportUnusedImport]
        from cassetter import use_cassette
    except ImportError:
        return []
    from agentool.testing import CassetteModel

    with tempfile.TemporaryDirectory(prefix='agentool-bench-') as temporary:
        ours, theirs = Path(temporary) / 'run.json', Path(temporary) / 'run.yaml'
        # One agent, its model given per run, as a test module has it.
        agent = weather_agent(None)
        live = CassetteModel(_openai_model(live=True), cassette=ours, mode='all')
        assert (await agent.run(PROMPT, model=live)).output == ANSWER
        with use_cassette(theirs, record_mode='all'):
            assert (await agent.run(PROMPT, model=_openai_model(live=True))).output == ANSWER

        async def replay_ours() -> None:
            # As the guide has a test replay: under the model's name, a model never made.
            model = CassetteModel('openai:gpt-4o', cassette=ours, mode='none')
            assert (await agent.run(PROMPT, model=model)).output == ANSWER

        async def replay_theirs() -> None:
            with use_cassette(theirs, record_mode='none'):
                assert (await agent.run(PROMPT, model=_openai_model(live=False))).output == ANSWER

        loops = max(1, scale.run_loops // 2)
        taken = await samples(
            {'ours': Plan(replay_ours, loops), 'theirs': Plan(replay_theirs, loops)}, max(3, scale.repeats), warmup=3
        )
        row = ratio(taken, 'ours', 'theirs')
        our_size, their_size = ours.stat().st_size, theirs.stat().st_size
    return [
        Row(
            benchmark='Replay of a three-request `OpenAIChatModel` run (file loaded per run): '
            '`CassetteModel` vs cassetter',
            measured=f'{duration(row.subject)} vs {duration(row.baseline)}; per-repeat ratios {row.spread}',
            ratio=row.median,
            target=0.50,
            cause='most of either side is pydantic-ai running the agent: of a replay of about 10 ms, agentool '
            'takes about 1.5 ms (loading the file about 0.5 ms, matching and rebuilding three responses about '
            '1 ms; the recorded cost spares pricing them again) and the rest is the run, as on `FunctionModel`; '
            'cassetter adds its SDK round trip and YAML on top of the same run, so even a free replay would '
            'stay near 0.4.',
        ),
        Row(
            benchmark='File size of the same `OpenAIChatModel` run: `CassetteModel` JSON vs cassetter YAML',
            measured=f'{size(our_size)} vs {size(their_size)}',
            ratio=our_size / their_size,
            target=1.0,
            cause='each exchange keeps the request normalised as JSON (tools with their schemas, settings) '
            'beside the response, where cassetter keeps the HTTP bodies.',
        ),
    ]


if __name__ == '__main__':
    import asyncio

    from ._table import render_markdown

    print(render_markdown(asyncio.run(cassetter_rows(Scale()))), end='')
