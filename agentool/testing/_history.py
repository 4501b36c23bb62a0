"""A cassette's requests as its file keeps them: each one the exchange it continues, plus what is new.

The file's `history` key is described in the record-and-replay guide ("The file"). In memory every
request is whole, and the requests share their history's message objects: read them, do not mutate.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

HISTORY = 'history'
"""The key of an exchange continuing an earlier one, in the file."""


def written(exchanges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exchanges as the file keeps them: each continues the latest one it shares most leading messages with."""
    runs: dict[bytes, int] = {}  # digest of a run of leading messages -> the latest exchange with it
    requests: list[dict[str, Any] | None] = []
    kept: list[dict[str, Any]] = []
    for position, exchange in enumerate(exchanges):
        request, messages = _request_and_messages(exchange)
        requests.append(request)
        if request is None or messages is None:
            kept.append(exchange)
            continue
        digests = _leading_digests(messages)
        length = next((n for n in range(len(messages), 0, -1) if digests[n - 1] in runs), 0)
        earlier = runs[digests[length - 1]] if length else 0
        for digest in digests:
            runs[digest] = position
        base = requests[earlier] if length else None
        if base is None or not set(base) <= set(request):
            kept.append(exchange)
            continue
        own: dict[str, Any] = {'messages': messages[length:]}
        own.update((key, value) for key, value in request.items() if key != 'messages' and value != base[key])
        kept.append({**exchange, HISTORY: {'exchange': earlier, 'messages': length}, 'request': own})
    return kept


def read(exchanges: object) -> object:
    """The file's exchanges with every request whole; a `ValueError` for a history that does not fit."""
    if not isinstance(exchanges, list):
        return exchanges
    whole: list[Any] = []
    for position, exchange in enumerate(cast('list[Any]', exchanges)):
        if not isinstance(exchange, dict) or HISTORY not in exchange:
            whole.append(exchange)
            continue
        data = dict(cast('dict[str, Any]', exchange))
        history = data.pop(HISTORY)
        earlier, length = _reference(history, position)
        base, own = _request_and_messages(whole[earlier]), _request_and_messages(data)
        if base[0] is None or base[1] is None or own[0] is None or own[1] is None:
            raise ValueError(f"exchange {position}: its request or exchange {earlier}'s is not a request")
        if length > len(base[1]):
            raise ValueError(
                f'exchange {position}: history takes {length} messages of exchange {earlier}, which has {len(base[1])}'
            )
        data['request'] = {**base[0], **own[0], 'messages': base[1][:length] + own[1]}
        whole.append(data)
    return whole


def _reference(history: object, position: int) -> tuple[int, int]:
    if isinstance(history, dict):
        fields = cast('dict[str, object]', history)
        earlier, length = fields.get('exchange'), fields.get('messages')
        if type(earlier) is int and type(length) is int and 0 <= earlier < position and length >= 0:
            return earlier, length
    raise ValueError(
        f'exchange {position}: history must be {{"exchange": <an earlier position>, "messages": <a count>}}'
    )


def _request_and_messages(exchange: object) -> tuple[dict[str, Any] | None, list[Any] | None]:
    request = cast('dict[str, Any]', exchange).get('request') if isinstance(exchange, dict) else None
    if not isinstance(request, dict):
        return None, None
    fields = cast('dict[str, Any]', request)
    messages = fields.get('messages')
    return fields, cast('list[Any]', messages) if isinstance(messages, list) else None


def _leading_digests(messages: list[Any]) -> list[bytes]:
    """The digest of each run of leading messages: the first, the first two, ..."""
    digests: list[bytes] = []
    chain = b''
    for message in messages:
        text = json.dumps(message, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=repr)
        chain = hashlib.blake2b(chain + text.encode('utf-8', 'surrogatepass'), digest_size=16).digest()
        digests.append(chain)
    return digests
