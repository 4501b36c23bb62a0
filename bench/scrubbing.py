"""Scrubbing throughput: `scrub` over a cassette-sized exchange vs a JSON round trip of the same data.

Every exchange and tool call a cassette writes passes through `agentool.testing.scrub.scrub`, so
its speed is paid on every recorded request. The subject is about 1 MB of what a long run sends: a
history of prose turns, tool calls whose arguments are JSON text, tool results holding JSON,
provider URLs, and a few secrets of the shapes scrubbed (so the replacing paths run too). The
baseline is `json.loads(json.dumps(data))` of the same data: the least any scrubber that walks
JSON pays. Both are timed in CPU time, interleaved; the row shows the throughput in MB/s.
"""

from __future__ import annotations

import json
import random
from typing import Any

from agentool.testing.scrub import scrub

from ._table import Row
from ._timing import Plan, Scale, ratio, samples

__all__ = ('scrubbing_rows', 'exchange')

_PROSE = (
    'the weather in Paris is sunny with a light breeze; call geocode first, then weather for the '
    'coordinates. Note: max_tokens counts the answer only. Token usage: 1200 input, 300 output. '
    'See https://docs.example.com/v1/guide?lang=en#units for the units (C or F).'
)
_WORDS = tuple(_PROSE.split(' '))


def _turn(rng: random.Random, index: int) -> dict[str, Any]:
    prose = ' '.join(rng.choice(_WORDS) for _ in range(120))
    args = json.dumps({'city': 'Paris', 'day': index, 'note': ' '.join(rng.choice(_WORDS) for _ in range(30))})
    result = json.dumps({'temp_c': 21.5, 'sky': 'sunny', 'source': f'https://api.example.com/w?id={index}'})
    parts: list[dict[str, Any]] = [
        {'part_kind': 'user-prompt', 'content': prose},
        {'part_kind': 'tool-call', 'tool_name': 'weather', 'args': args, 'tool_call_id': f'call_{index}'},
        {'part_kind': 'tool-return', 'tool_name': 'weather', 'content': result, 'tool_call_id': f'call_{index}'},
    ]
    if index % 50 == 0:  # a few secrets, so the replacing paths are timed too
        token = ''.join(rng.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(32))
        parts.append({'part_kind': 'text', 'content': f'Authorization: Bearer {token}\nDB_PASSWORD={token}'})
    return {'kind': 'request', 'parts': parts}


def exchange(megabytes: float = 1.0) -> dict[str, Any]:
    """A deterministic exchange of about `megabytes` MB of JSON, shaped like a long run's request."""
    rng = random.Random(41)
    messages: list[dict[str, Any]] = []
    data: dict[str, Any] = {
        'request': {'messages': messages},
        'response': {'provider_url': 'https://api.example.com/v1'},
    }
    while len(json.dumps(data)) < megabytes * 1_000_000:
        messages.extend(_turn(rng, len(messages) + index) for index in range(20))
    return data


async def scrubbing_rows(scale: Scale) -> list[Row]:
    """`scrub` of about 1 MB vs a JSON round trip of it, repeat by repeat."""
    data = exchange(1.0 if scale.repeats > 3 else 0.2)
    megabytes = len(json.dumps(data, ensure_ascii=False).encode()) / 1e6

    async def scrubbed() -> object:
        return scrub(data)

    async def round_trip() -> object:
        return json.loads(json.dumps(data, ensure_ascii=False))

    taken = await samples({'scrub': Plan(scrubbed, 1), 'json': Plan(round_trip, 1)}, max(3, scale.repeats), warmup=1)
    row = ratio(taken, 'scrub', 'json')
    return [
        Row(
            benchmark=f'Scrubbing a {megabytes:.1f} MB exchange vs a JSON round trip of it',
            measured=f'{megabytes / row.subject:.1f} MB/s vs {megabytes / row.baseline:.1f} MB/s '
            f'(before issue 41: about 1 MB/s); per-repeat ratios {row.spread}',
            ratio=row.median,
            target=15.0,
            cause="every string is matched against the text rules and detect-secrets' token shapes "
            '(Python regexes, tens of MB/s each) besides the walk.',
        )
    ]


if __name__ == '__main__':
    import asyncio

    from ._table import render_markdown

    print(render_markdown(asyncio.run(scrubbing_rows(Scale()))), end='')
