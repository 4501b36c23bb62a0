"""Provider-shaped mock servers, so real pydantic-ai provider models and their official SDKs run end to end offline.

A `MockServer` answers scripted `Turn`s as OpenAI Chat Completions, OpenAI Responses or Anthropic Messages would
(one JSON body, or an SSE stream), through `httpx2.MockTransport` to the provider's own SDK client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

__all__ = ('KINDS', 'REFUSED', 'Kind', 'MockServer', 'Turn', 'refusing_model')

Kind = Literal['openai-chat', 'openai-responses', 'anthropic']
KINDS: tuple[Kind, ...] = ('openai-chat', 'openai-responses', 'anthropic')

_PATHS: dict[Kind, str] = {
    'openai-chat': '/v1/chat/completions',
    'openai-responses': '/v1/responses',
    'anthropic': '/v1/messages',
}
_CONVERSATION_KEY: dict[Kind, str] = {'openai-chat': 'messages', 'openai-responses': 'input', 'anthropic': 'messages'}
_MODEL_NAMES: dict[Kind, str] = {
    'openai-chat': 'gpt-4o',
    'openai-responses': 'gpt-4o',
    'anthropic': 'claude-sonnet-4-6',
}
_USAGE_IN, _USAGE_OUT = 11, 7
_CHAT_USAGE = {'prompt_tokens': _USAGE_IN, 'completion_tokens': _USAGE_OUT, 'total_tokens': _USAGE_IN + _USAGE_OUT}

REFUSED: list[str] = []
"""Every request a refusing transport was sent (`'METHOD url'`): a replay leaves it empty."""


@dataclass(frozen=True, kw_only=True)
class Turn:
    """One scripted model answer: optional thinking, then text, then at most one tool call."""

    text: str | None = None
    thinking: str | None = None
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class MockServer:
    """Answers the scripted turns in order, in the wire format of one provider."""

    kind: Kind
    turns: list[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def model(self) -> Model:
        """The real pydantic-ai model class of this provider, its SDK client served by this mock."""
        return _build_model(self.kind, httpx2.MockTransport(self.handle))

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        """Checks the request lightly (endpoint, model, conversation, a tool result sent back) and keeps it."""
        assert request.method == 'POST', request.method
        assert request.url.path == _PATHS[self.kind], f'{self.kind}: unexpected endpoint {request.url}'
        body: dict[str, Any] = json.loads(request.content)
        assert body['model'] == _MODEL_NAMES[self.kind], body['model']
        assert body[_CONVERSATION_KEY[self.kind]], f'{self.kind}: empty conversation'
        index = len(self.requests)
        assert index < len(self.turns), f'{self.kind}: request {index + 1} but only {len(self.turns)} turns scripted'
        if index and (previous := self.turns[index - 1]).tool is not None:
            # The answer to a tool call comes back with the call's id in the next request.
            assert _call_id(self.kind, index - 1) in request.content.decode(), f'{previous.tool} result not sent back'
        self.requests.append(body)
        turn = self.turns[index]
        if body.get('stream'):
            events = list(_STREAMERS[self.kind](turn, index))
            return httpx2.Response(200, headers={'content-type': 'text/event-stream'}, content=_sse(events))
        return httpx2.Response(200, json=_BODIES[self.kind](turn, index))


def refusing_model(kind: Kind) -> Model:
    """The provider's model over a transport that fails every request, recording it in `REFUSED`."""

    def refuse(request: httpx2.Request) -> httpx2.Response:
        REFUSED.append(f'{request.method} {request.url}')
        raise AssertionError(f'a replay must not reach the network: {request.method} {request.url}')

    return _build_model(kind, httpx2.MockTransport(refuse))


def _build_model(kind: Kind, transport: httpx2.MockTransport) -> Model:
    http_client = httpx2.AsyncClient(transport=transport)
    name = _MODEL_NAMES[kind]
    if kind == 'anthropic':
        anthropic = AsyncAnthropic(
            api_key='test-key', base_url='https://anthropic.mock', http_client=http_client, max_retries=0
        )
        # A bounded `max_tokens`: with the model's maximum, pydantic-ai streams even a non-streaming request.
        return AnthropicModel(
            name, provider=AnthropicProvider(anthropic_client=anthropic), settings={'max_tokens': 1024}
        )
    client = AsyncOpenAI(api_key='test-key', base_url='https://openai.mock/v1', http_client=http_client, max_retries=0)
    provider = OpenAIProvider(openai_client=client)
    if kind == 'openai-chat':
        return OpenAIChatModel(name, provider=provider)
    return OpenAIResponsesModel(name, provider=provider)


def _call_id(kind: Kind, index: int) -> str:
    return f'toolu_{index}' if kind == 'anthropic' else f'call_{index}'


def _arguments(turn: Turn) -> str:
    return json.dumps(turn.args, sort_keys=True)


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    chunks: list[str] = []
    for event, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        chunks.append((f'event: {event}\n' if event else '') + f'data: {payload}\n\n')
    return ''.join(chunks).encode()


def _halves(text: str) -> list[str]:
    """A text split in two deltas, so a stream really streams it in pieces."""
    middle = max(1, len(text) // 2)
    return [text[:middle], text[middle:]] if len(text) > 1 else [text]


# --- OpenAI Chat Completions ---------------------------------------------------------------------


def _chat_body(turn: Turn, index: int) -> dict[str, Any]:
    message: dict[str, Any] = {'role': 'assistant', 'content': turn.text}
    if turn.thinking is not None:
        message['reasoning_content'] = turn.thinking
    if turn.tool is not None:
        message['tool_calls'] = [
            {
                'id': _call_id('openai-chat', index),
                'type': 'function',
                'function': {'name': turn.tool, 'arguments': _arguments(turn)},
            }
        ]
    return {
        'id': f'chatcmpl-{index}',
        'object': 'chat.completion',
        'created': 1_700_000_000 + index,
        'model': _MODEL_NAMES['openai-chat'],
        'choices': [{'index': 0, 'message': message, 'finish_reason': 'tool_calls' if turn.tool else 'stop'}],
        'usage': _CHAT_USAGE,
    }


def _chat_stream(turn: Turn, index: int) -> Iterator[tuple[str | None, dict[str, Any] | str]]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
        choices = [{'index': 0, 'delta': delta, 'finish_reason': finish}] if usage is None else []
        return {
            'id': f'chatcmpl-{index}',
            'object': 'chat.completion.chunk',
            'created': 1_700_000_000 + index,
            'model': _MODEL_NAMES['openai-chat'],
            'choices': choices,
            'usage': usage,
        }

    yield None, chunk({'role': 'assistant', 'content': ''})
    for piece in _halves(turn.thinking or ''):
        if piece:
            yield None, chunk({'reasoning_content': piece})
    for piece in _halves(turn.text or ''):
        if piece:
            yield None, chunk({'content': piece})
    if turn.tool is not None:
        call = {'index': 0, 'id': _call_id('openai-chat', index), 'type': 'function'}
        yield None, chunk({'tool_calls': [{**call, 'function': {'name': turn.tool, 'arguments': ''}}]})
        for piece in _halves(_arguments(turn)):
            yield None, chunk({'tool_calls': [{'index': 0, 'function': {'arguments': piece}}]})
    yield None, chunk({}, finish='tool_calls' if turn.tool else 'stop')
    yield None, chunk({}, usage=_CHAT_USAGE)
    yield None, '[DONE]'


# --- OpenAI Responses ------------------------------------------------------------------------------


def _responses_items(turn: Turn, index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.thinking is not None:
        summary = [{'type': 'summary_text', 'text': turn.thinking}]
        items.append({'type': 'reasoning', 'id': f'rs_{index}', 'summary': summary})
    if turn.text is not None:
        content = [{'type': 'output_text', 'text': turn.text, 'annotations': []}]
        items.append(
            {'type': 'message', 'id': f'msg_{index}', 'role': 'assistant', 'status': 'completed', 'content': content}
        )
    if turn.tool is not None:
        items.append(
            {
                'type': 'function_call',
                'id': f'fc_{index}',
                'call_id': _call_id('openai-responses', index),
                'name': turn.tool,
                'arguments': _arguments(turn),
                'status': 'completed',
            }
        )
    return items


def _responses_body(turn: Turn, index: int, *, output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        'id': f'resp_{index}',
        'object': 'response',
        'created_at': 1_700_000_000 + index,
        'model': _MODEL_NAMES['openai-responses'],
        'status': 'completed',
        'output': _responses_items(turn, index) if output is None else output,
        'parallel_tool_calls': True,
        'tool_choice': 'auto',
        'tools': [],
        'usage': {
            'input_tokens': _USAGE_IN,
            'output_tokens': _USAGE_OUT,
            'total_tokens': _USAGE_IN + _USAGE_OUT,
            'input_tokens_details': {'cached_tokens': 0},
            'output_tokens_details': {'reasoning_tokens': 0},
        },
    }


def _responses_stream(turn: Turn, index: int) -> Iterator[tuple[str | None, dict[str, Any] | str]]:
    sequence = iter(range(1_000))

    def event(name: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return name, {'type': name, 'sequence_number': next(sequence), **data}

    started = {**_responses_body(turn, index, output=[]), 'status': 'in_progress'}
    yield event('response.created', response=started)
    for position, item in enumerate(_responses_items(turn, index)):
        where: dict[str, Any] = {'output_index': position, 'item_id': item['id']}
        if item['type'] == 'reasoning':
            yield event('response.output_item.added', output_index=position, item={**item, 'summary': []})
            part = {'type': 'summary_text', 'text': ''}
            yield event('response.reasoning_summary_part.added', **where, summary_index=0, part=part)
            for piece in _halves(item['summary'][0]['text']):
                yield event('response.reasoning_summary_text.delta', **where, summary_index=0, delta=piece)
            text = item['summary'][0]['text']
            yield event('response.reasoning_summary_text.done', **where, summary_index=0, text=text)
            done_part = {'type': 'summary_text', 'text': text}
            yield event('response.reasoning_summary_part.done', **where, summary_index=0, part=done_part)
        elif item['type'] == 'message':
            added = {**item, 'status': 'in_progress', 'content': []}
            yield event('response.output_item.added', output_index=position, item=added)
            part = {'type': 'output_text', 'text': '', 'annotations': []}
            yield event('response.content_part.added', **where, content_index=0, part=part)
            text = item['content'][0]['text']
            for piece in _halves(text):
                yield event('response.output_text.delta', **where, content_index=0, delta=piece, logprobs=[])
            yield event('response.output_text.done', **where, content_index=0, text=text, logprobs=[])
            yield event('response.content_part.done', **where, content_index=0, part=item['content'][0])
        else:
            added = {**item, 'status': 'in_progress', 'arguments': ''}
            yield event('response.output_item.added', output_index=position, item=added)
            for piece in _halves(item['arguments']):
                yield event('response.function_call_arguments.delta', **where, delta=piece)
            yield event('response.function_call_arguments.done', **where, arguments=item['arguments'])
        yield event('response.output_item.done', output_index=position, item=item)
    yield event('response.completed', response=_responses_body(turn, index))


# --- Anthropic Messages ----------------------------------------------------------------------------


def _anthropic_blocks(turn: Turn, index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.thinking is not None:
        blocks.append({'type': 'thinking', 'thinking': turn.thinking, 'signature': f'sig-{index}'})
    if turn.text is not None:
        blocks.append({'type': 'text', 'text': turn.text})
    if turn.tool is not None:
        blocks.append({'type': 'tool_use', 'id': _call_id('anthropic', index), 'name': turn.tool, 'input': turn.args})
    return blocks


def _anthropic_body(turn: Turn, index: int, *, content: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        'id': f'msg_{index}',
        'type': 'message',
        'role': 'assistant',
        'model': _MODEL_NAMES['anthropic'],
        'content': _anthropic_blocks(turn, index) if content is None else content,
        'stop_reason': 'tool_use' if turn.tool else 'end_turn',
        'stop_sequence': None,
        'usage': {'input_tokens': _USAGE_IN, 'output_tokens': _USAGE_OUT},
    }


def _anthropic_stream(turn: Turn, index: int) -> Iterator[tuple[str | None, dict[str, Any] | str]]:
    def event(name: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return name, {'type': name, **data}

    started = {**_anthropic_body(turn, index, content=[]), 'stop_reason': None}
    yield event('message_start', message={**started, 'usage': {'input_tokens': _USAGE_IN, 'output_tokens': 1}})
    for position, block in enumerate(_anthropic_blocks(turn, index)):
        if block['type'] == 'thinking':
            yield event('content_block_start', index=position, content_block={**block, 'thinking': '', 'signature': ''})
            for piece in _halves(block['thinking']):
                yield event('content_block_delta', index=position, delta={'type': 'thinking_delta', 'thinking': piece})
            signature = {'type': 'signature_delta', 'signature': block['signature']}
            yield event('content_block_delta', index=position, delta=signature)
        elif block['type'] == 'text':
            yield event('content_block_start', index=position, content_block={**block, 'text': ''})
            for piece in _halves(block['text']):
                yield event('content_block_delta', index=position, delta={'type': 'text_delta', 'text': piece})
        else:
            yield event('content_block_start', index=position, content_block={**block, 'input': {}})
            for piece in _halves(_arguments(turn)):
                delta = {'type': 'input_json_delta', 'partial_json': piece}
                yield event('content_block_delta', index=position, delta=delta)
        yield event('content_block_stop', index=position)
    stop = {'stop_reason': 'tool_use' if turn.tool else 'end_turn', 'stop_sequence': None}
    yield event('message_delta', delta=stop, usage={'output_tokens': _USAGE_OUT})
    yield event('message_stop')


_BODIES = {'openai-chat': _chat_body, 'openai-responses': _responses_body, 'anthropic': _anthropic_body}
_STREAMERS = {'openai-chat': _chat_stream, 'openai-responses': _responses_stream, 'anthropic': _anthropic_stream}
