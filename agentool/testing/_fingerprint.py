"""What a model request is, for a cassette: a normalised view, its fingerprint, and the drift between two.

The view drops what differs between identical runs (timestamps, ids, usage) and every empty field,
so a pydantic-ai release that adds a field does not change old fingerprints.
"""

from __future__ import annotations

import copy
import hashlib
import json
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic_ai import ModelMessagesTypeAdapter
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_core import to_jsonable_python

from ..errors import CassetteMismatchError
from ._advice import RecordAdvice
from ._changes import show_pair, tool_changes
from ._files import path_detail, place
from .cassette import Exchange

_VOLATILE = frozenset(
    {
        'timestamp',
        'tool_call_id',
        'run_id',
        'conversation_id',
        'provider_response_id',
        'usage',
        'history_digest',
        'model_id',
    }
)
_PARAMETERS = (
    'function_tools',
    'native_tools',
    'output_mode',
    'output_object',
    'output_tools',
    'prompted_output_template',
    'allow_text_output',
    'allow_image_output',
    'instruction_parts',
    'thinking',
)
# Settings that shape transport, not the answer.
_TRANSPORT_SETTINGS = frozenset(
    {'timeout', 'request_timeout', 'first_event_timeout', 'max_retries', 'extra_headers', 'framing_announcement'}
)


def request_view(
    messages: list[ModelMessage], settings: ModelSettings | None, parameters: ModelRequestParameters
) -> dict[str, Any]:
    """The request as a cassette keeps it: messages, tools, output, settings, all normalised."""
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode='json')
    return {'messages': _clean(dumped), **_rest(settings, parameters)}


def _rest(settings: ModelSettings | None, parameters: ModelRequestParameters) -> dict[str, Any]:
    params = {name: getattr(parameters, name, None) for name in _PARAMETERS}
    chosen = {key: value for key, value in (settings or {}).items() if key not in _TRANSPORT_SETTINGS}
    return {
        'parameters': _clean(to_jsonable_python(params, fallback=repr)),
        'settings': _clean(to_jsonable_python(chosen, fallback=repr)),
    }


def fingerprint(view: Mapping[str, Any]) -> str:
    """A stable hash of a request view (canonical JSON, SHA-256)."""
    return _hash(_canonical(view))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=False)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:32]


_KEPT_FROM = 8
"""Messages in a request past which its messages' views are kept for the next request."""


class RequestViews:
    """Fingerprints of a model's requests with each message viewed once while it lives unchanged.

    A run's requests repeat its history: each view is kept, and reused while its message equals a copy.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[weakref.ref[ModelMessage], ModelMessage, str]] = {}
        # The last request's parameters and settings with their view: a run's requests mostly repeat them.
        self._rest: tuple[ModelRequestParameters, dict[str, Any], str] | None = None

    def fingerprint(
        self, messages: list[ModelMessage], settings: ModelSettings | None, parameters: ModelRequestParameters
    ) -> str:
        """What `fingerprint(request_view(...))` gives for this request."""
        keep = len(messages) > _KEPT_FROM
        texts: list[str | None] = [self._known(message) for message in messages] if keep else [None] * len(messages)
        fresh = [message for message, text in zip(messages, texts, strict=True) if text is None]
        if fresh:
            views = iter(_clean(ModelMessagesTypeAdapter.dump_python(fresh, mode='json')))
            for index, message in enumerate(messages):
                if texts[index] is None:
                    text = _canonical(next(views))
                    texts[index] = self._keep(message, text) if keep else text
        # The canonical JSON of the whole view, its keys in order, built from the parts kept.
        return _hash(f'{{"messages":[{",".join(cast("list[str]", texts))}],{self._rest_text(settings, parameters)}}}')

    def _rest_text(self, settings: ModelSettings | None, parameters: ModelRequestParameters) -> str:
        chosen = dict(settings or {})
        last = self._rest
        if last is not None and last[1] == chosen and last[0] == parameters:
            return last[2]
        rest = _rest(settings, parameters)
        text = f'"parameters":{_canonical(rest["parameters"])},"settings":{_canonical(rest["settings"])}'
        self._rest = (parameters, chosen, text)
        return text

    def _known(self, message: ModelMessage) -> str | None:
        seen = self._seen.get(id(message))
        if seen is None or seen[0]() is not message:
            return None
        try:
            same = message == seen[1]
        except Exception:  # content whose comparison raises is viewed afresh
            return None
        return seen[2] if same is True else None

    def _keep(self, message: ModelMessage, text: str) -> str:
        try:
            snapshot = copy.deepcopy(message)
        except Exception:  # content that cannot be copied is viewed afresh each time
            return text
        key = id(message)

        def forget(ref: weakref.ref[ModelMessage], key: int = key) -> None:
            if (seen := self._seen.get(key)) is not None and seen[0] is ref:
                del self._seen[key]

        self._seen[key] = (weakref.ref(message, forget), snapshot, text)
        return text


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return _clean_dict(cast('dict[str, Any]', value))
    if isinstance(value, list):
        return [_clean(item) for item in cast('list[Any]', value)]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _clean_dict(value: dict[str, Any]) -> dict[str, Any]:
    # Every replayed request is cleaned whole: text and integers, most of it, are kept without a call.
    cleaned: dict[str, Any] = {}
    for key, item in value.items():
        if item is None or key in _VOLATILE:
            continue
        if isinstance(item, str | int):
            cleaned[key] = item
        elif item != {} and item != []:
            cleaned[key] = _clean(item)
    return cleaned


def drift(sent: Mapping[str, Any], recorded: Mapping[str, Any]) -> list[str]:
    """What changed from `recorded` to `sent`, one readable line each (tools, prompts, messages...)."""
    changes: list[str] = []
    sent_messages: list[Any] = sent.get('messages', [])
    recorded_messages: list[Any] = recorded.get('messages', [])
    if len(sent_messages) != len(recorded_messages):
        changes.append(f'number of messages: {len(recorded_messages)} recorded, {len(sent_messages)} sent')
    for label, kind in (('system prompt', 'system-prompt'), ('user prompt', 'user-prompt')):
        before, after = part_contents(recorded_messages, kind), part_contents(sent_messages, kind)
        if before != after:
            changes.append(f'{label} changed: {show_pair(before, after)}')
    before, after = _instructions(recorded_messages), _instructions(sent_messages)
    if before != after:
        changes.append(f'instructions changed: {show_pair(before, after)}')
    sent_params: dict[str, Any] = sent.get('parameters', {})
    recorded_params: dict[str, Any] = recorded.get('parameters', {})
    for key, label in (('function_tools', 'tool'), ('output_tools', 'output tool')):
        changes.extend(tool_changes(label, recorded_params.get(key, []), sent_params.get(key, [])))
    for key in sorted(set(sent_params) | set(recorded_params)):
        if key in ('function_tools', 'output_tools', 'instruction_parts'):
            continue
        if sent_params.get(key) != recorded_params.get(key):
            changes.append(f'{key} changed: {show_pair(recorded_params.get(key), sent_params.get(key))}')
    if sent.get('settings', {}) != recorded.get('settings', {}):
        changes.append(f'settings changed: {show_pair(recorded.get("settings", {}), sent.get("settings", {}))}')
    if not changes and sent_messages != recorded_messages:
        index = next(i for i, (a, b) in enumerate(zip(sent_messages, recorded_messages, strict=False)) if a != b)
        returns = _tool_return_changes(recorded_messages[index], sent_messages[index])
        changes.extend(
            returns or [f'message {index + 1} changed: {show_pair(recorded_messages[index], sent_messages[index])}']
        )
    return changes


def _tool_return_changes(recorded: dict[str, Any], sent: dict[str, Any]) -> list[str]:
    """When a message differs only in what tools returned, one line per such tool naming the remedy."""
    before: list[dict[str, Any]] = recorded.get('parts', [])
    after: list[dict[str, Any]] = sent.get('parts', [])
    if len(before) != len(after) or _without(recorded, 'parts') != _without(sent, 'parts'):
        return []
    changes: list[str] = []
    for old, new in zip(before, after, strict=True):
        if old == new:
            continue
        if old.get('part_kind') != 'tool-return' or _without(old, 'content') != _without(new, 'content'):
            return []
        tool, pair = old.get('tool_name'), show_pair(old.get('content'), new.get('content'))
        changes.append(
            f'only the result of tool {tool!r} differs: {pair}; '
            'a tool whose result changes between runs (a new id, the time, a database) cannot be fixed by '
            're-recording: pass CassetteTools(model) so its recorded result is replayed'
        )
    return changes


def _without(data: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != key}


def part_contents(messages: list[Any], kind: str) -> list[Any]:
    """The content of each part of `kind` (`user-prompt`...) in messages as a view holds them."""
    parts: list[dict[str, Any]] = [part for message in messages for part in message.get('parts', [])]
    return [part.get('content') for part in parts if part.get('part_kind') == kind]


def tool_returns(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tool-return parts of a recorded request's last message: the results it answers with."""
    messages = cast('list[dict[str, Any]]', request.get('messages') or [])
    parts = cast('list[dict[str, Any]]', messages[-1].get('parts') or []) if messages else []
    return [part for part in parts if part.get('part_kind') == 'tool-return']


def _instructions(messages: list[Any]) -> list[Any]:
    return [message.get('instructions') for message in messages if message.get('kind') == 'request']


def mismatch(
    mode: str,
    key: str,
    view: Mapping[str, Any],
    exchanges: Sequence[Exchange],
    *,
    path: Path | None,
    advice: RecordAdvice,
) -> CassetteMismatchError:
    """The error for a request matching no exchange: what changed against the closest one, how to record."""
    shown: list[str] = []
    if not exchanges:
        said = f'holds no exchanges; record it ({advice.fill()})'
    else:
        changes = min((drift(view, exchange.request) for exchange in exchanges), key=lambda found: len(found) or 99)
        shown = changes[:8] + ([f'... and {len(changes) - 8} more'] if len(changes) > 8 else [])
        lines = '\n'.join(f'  - {line}' for line in shown) or '  - (no difference in the normalised request)'
        only_results = all(line.startswith('only the result of tool') for line in changes)
        hint = (
            'Replay the tools from the cassette with CassetteTools(model) (record them once with it).'
            if changes and only_results
            else f'Re-record with {advice.rerecord()} if the change is intended.'
        )
        said = f'has no recorded exchange for this request (mode {mode!r}); against the closest recorded request:'
        said += f'\n{lines}\n{hint}'
    message = f'cassette {place(path)} {said}'
    return CassetteMismatchError(message, path=path_detail(path), fingerprint=key, changes=shown)
