"""`CassetteModel`: record what any pydantic-ai model answers once, replay it offline forever."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_ai import RunContext, native_tools
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    ToolCallPart,
)
from pydantic_ai.models import (
    KnownModelName,
    Model,
    ModelRequestParameters,
    infer_model,
)
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from .._answering import Answer, AnsweringModel, OneStepModel, Request
from ..errors import CassetteError, clip, quote
from ._advice import ADVICE, RecordAdvice
from ._files import as_path, cassette_error, path_detail, place
from ._fingerprint import RequestViews, fingerprint, mismatch, request_view
from ._profile import plain_profile, restored_profile
from ._tool_results import ToolAnswers, replayed_result, written_result
from .cassette import Cassette, CassetteInfo, Exchange, RecordedRun, RecordedToolCall, RecordMode
from .double import AgentDouble
from .script import Call, Output, Prompt, Script, Step
from .scrub import PLACEHOLDER
from .scrub import scrub as scrub_data

__all__ = ('CassetteModel', 'Redactor', 'runs_double')

_MODES: tuple[str, ...] = get_args(RecordMode)
_Entry = TypeVar('_Entry', bound=BaseModel)

Redactor = Callable[[dict[str, Any]], dict[str, Any]]
"""Called with each new exchange or tool call as JSON, after the default scrubbing; returns what to
write. A redacted cassette still replays: see "Secrets and redaction" in the record-and-replay guide."""
_EMPTY_EXCHANGE: dict[str, Any] = {'fingerprint': '', 'response': {}, 'stream': None}


@dataclass(init=False)
class CassetteModel(OneStepModel, WrapperModel):
    """A model that records the model it wraps to a cassette, or replays the cassette without it.

    `wrapped` may be `None` to replay; a model name is made into a model only when recording, so a
    replay needs neither SDK nor key. A `CassetteError` for an unknown mode, or a cassette file that
    cannot be read (or is missing in mode `none`).
    """

    wrapped: Model
    """The model a recording mode calls; in replay the model given (not called), a stand-in or a runs double."""
    cassette: Cassette
    path: Path | None
    """Where the cassette is written; `None` for one kept in memory."""
    mode: RecordMode
    redact: Redactor | None
    scrub: bool
    advice: RecordAdvice = field(repr=False)
    """How its errors say to record: a mode, or (in pytest) the pytest option."""
    _records: bool = field(repr=False)
    _plays_runs: bool = field(repr=False)
    _by_fingerprint: dict[str, list[Exchange]] = field(repr=False)
    _by_clean: dict[str, list[Exchange]] | None = field(repr=False)
    """Exchanges by the request as written, made at the first request not found as sent."""
    _seen: Counter[str] = field(repr=False)
    _used: set[int] = field(repr=False)
    _views: RequestViews = field(repr=False)

    def __init__(
        self,
        wrapped: Model | KnownModelName | str | None = None,
        *,
        cassette: str | os.PathLike[str] | Cassette,
        mode: RecordMode = 'none',
        redact: Redactor | None = None,
        scrub: bool = True,
    ) -> None:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if mode not in _MODES:
            raise CassetteError(
                f'unknown cassette mode {quote(str(mode))}; use one of {", ".join(_MODES)}',
                reason='mode',
                mode=clip(str(mode)),
            )
        if redact is not None and not callable(redact):
            raise CassetteError(f'redact must be a function; got {quote(redact)}', reason='redact')
        if not isinstance(cast(object, scrub), bool):
            raise CassetteError(f'scrub must be True or False; got {quote(scrub)}', reason='scrub')
        self.mode = mode
        self.redact = redact
        self.scrub = scrub
        self.advice = ADVICE.get()
        if isinstance(cassette, Cassette):
            # An empty cassette in memory counts as missing, for mode 'once'.
            self.path, loaded = None, cassette
            exists = bool(cassette.exchanges or cassette.runs or cassette.tool_calls)
            if mode == 'all':
                cassette.exchanges.clear()
                cassette.runs.clear()
                cassette.tool_calls.clear()
        else:
            self.path = as_path(cassette)
            exists = self.path.exists()
            loaded = Cassette.load(self.path) if exists and mode != 'all' else Cassette()
            if mode == 'none' and not exists:
                raise CassetteError(
                    f'cassette {str(self.path)!r} does not exist; record it first ({self.advice.record()})',
                    path=str(self.path),
                    reason='missing',
                )
        self.cassette = loaded
        self._records = mode in ('all', 'new_episodes') or (mode == 'once' and not exists)
        self._plays_runs = not self._records and bool(loaded.runs) and not loaded.exchanges
        super().__init__(self._wrapped(wrapped, loaded))
        self._by_fingerprint, self._by_clean = {}, None
        for exchange in loaded.exchanges:
            self._by_fingerprint.setdefault(exchange.fingerprint, []).append(exchange)
        self._seen = Counter()
        self._used = set()
        self._views = RequestViews()

    def _wrapped(self, given: object, loaded: Cassette) -> Model:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if self._plays_runs:
            return runs_double(loaded.runs)  # never the model given: in replay it is not called
        if given is None or (isinstance(given, str) and not self._records):
            return _RecordedModel(self)
        if isinstance(given, Model):
            return cast('Model[Any]', given)
        if not isinstance(given, str):
            raise CassetteError(
                f'CassetteModel wraps a pydantic-ai Model, a model name or None; got {quote(given)}', reason='model'
            )
        try:
            return infer_model(given)
        except (UserError, ValueError, ImportError) as error:
            raise CassetteError(
                f'CassetteModel cannot make model {quote(given)}: {clip(str(error))}', reason='model'
            ) from None

    @property
    def records(self) -> bool:
        """Whether a request (or tool call) this cassette does not hold is recorded rather than refused."""
        return self._records

    def save(self) -> None:
        """Write the cassette to its file (a no-op for one kept in memory)."""
        if self.path is not None:
            self.cassette.save(self.path)

    @classmethod
    def supported_native_tools(cls) -> frozenset[type[AbstractNativeTool]]:
        # Every one: the profile in effect (the wrapped model's, or the recorded one) narrows it.
        return native_tools.SUPPORTED_NATIVE_TOOLS

    @property
    def settings(self) -> ModelSettings | None:
        # Left to the wrapped model, so a request's fingerprint is the same with and without it.
        return None

    async def _answer(self, request: Request, run_context: RunContext[Any] | None, stream: bool) -> Answer:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if self._plays_runs:  # the double playing the runs answers, as it would alone
            return await cast(OneStepModel, self.wrapped)._answer(request, run_context, stream)
        messages, settings, params = request
        exchange, view, key = self._find(request)
        if exchange is not None:
            response, events = _typed_placeholders(*_recorded(exchange, self.path, stream=stream), params)
            return response, events or True, params
        if stream:
            # Drained before the run sees it, so a recording run and its replays see the same events.
            async with self._recorder().request_stream(messages, settings, params, run_context) as live:
                events = [event async for event in live]
                response = live.get()
        else:
            response, events = await self._recorder().request(messages, settings, params), None
        self._keep(key, view, response, events)
        return response, events or True, params

    def _find(self, request: Request) -> tuple[Exchange | None, dict[str, Any], str]:
        """The recorded exchange (its occurrence counted) or `None` to record, the request's view
        (empty when found by `RequestViews`) and its fingerprint."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if not self._records:
            # Replay only: a run's history is viewed once; a miss (or a message changed in place) afresh.
            key = self._views.fingerprint(*request)
            if recorded := self._by_fingerprint.get(key):
                return self._take(key, recorded), {}, key
        view = request_view(*request)
        key = counted = fingerprint(view)
        recorded = self._by_fingerprint.get(key, [])
        if not recorded and (by_clean := self._clean_index()):
            # Then as written (scrubbed, redacted): a replayed history holds the cassette's placeholders.
            cleaned = fingerprint(self._written_request(view))
            if cleaned in by_clean:
                counted, recorded = f'clean:{cleaned}', by_clean[cleaned]
        if self.mode == 'all' or (self._records and self._seen[counted] >= len(recorded)):
            self._seen[counted] += 1
            return None, view, key
        if recorded:
            return self._take(counted, recorded), view, key
        self._seen[counted] += 1
        raise mismatch(
            self.mode, key, self._written_request(view), self.cassette.exchanges, path=self.path, advice=self.advice
        )

    def _take(self, key: str, recorded: list[Exchange]) -> Exchange:
        """The exchange for this occurrence of `key`, counted; past the last, the last again."""
        occurrence = self._seen[key]
        self._seen[key] += 1
        exchange = recorded[min(occurrence, len(recorded) - 1)]
        self._used.add(id(exchange))
        return exchange

    def _clean_index(self) -> dict[str, list[Exchange]]:
        """The exchanges by written request where it differs from the sent one (made when first needed)."""
        if self._by_clean is None:
            self._by_clean = {}
            for exchange in self.cassette.exchanges:
                _index_clean(self._by_clean, exchange)
        return self._by_clean

    def unused_exchanges(self) -> list[Exchange]:
        """The recorded exchanges no request has used so far (a replay that left them is suspect)."""
        return [exchange for exchange in self.cassette.exchanges if id(exchange) not in self._used]

    def _recorder(self) -> Model:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if isinstance(self.wrapped, _RecordedModel):
            raise self.wrapped.no_model()
        return self.wrapped

    def tool_answers(self) -> ToolAnswers:
        """The cassette's tool results, looked up by arguments as they are written (scrubbed, redacted)."""
        return ToolAnswers(
            self.cassette.tool_calls,
            f'cassette {place(self.path)}',
            clean=self._written_args,
            # In pytest the option records it; in code a `Replay` has no mode to change, so no hint.
            hint=f'record it with {self.advice.rerecord()}' if self.advice.test is not None else '',
            path=path_detail(self.path),
        )

    def clean(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` (an exchange or a tool call, as JSON) as written: scrubbed, then redacted."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        cleaned = cast('dict[str, Any]', scrub_data(data)) if self.scrub else data
        if self.redact is None:
            return cleaned
        redacted = cast(object, self.redact(copy.deepcopy(cleaned)))
        if not isinstance(redacted, dict):
            raise CassetteError(
                f'the redaction hook returned {type(redacted).__name__}, not the exchange dict',
                path=path_detail(self.path),
                reason='redact',
            )
        return cast('dict[str, Any]', redacted)

    def _written_request(self, view: dict[str, Any]) -> dict[str, Any]:
        """A live request's view as the cassette would have written it (for matching)."""
        cleaned = scrub_data(view) if self.scrub else view
        if self.redact is not None:
            try:
                redacted = cast(object, self.redact({**_EMPTY_EXCHANGE, 'request': copy.deepcopy(cleaned)}))
            except Exception:  # a hook written for whole exchanges only: match the request unredacted
                return cleaned
            request = cast('dict[str, Any]', redacted).get('request') if isinstance(redacted, dict) else None
            if isinstance(request, dict):
                return cast('dict[str, Any]', request)
        return cleaned

    def _written_args(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A tool call's arguments as the cassette would have written them (for finding its result)."""
        cleaned = self.clean({'tool': tool, 'args': args, 'result': None}).get('args')
        return cast('dict[str, Any]', cleaned) if isinstance(cleaned, dict) else args

    def written_tool_call(
        self, tool: str, args: dict[str, Any], result: Any, returns: TypeAdapter[Any] | None = None
    ) -> RecordedToolCall:
        """A tool's result as the cassette writes it (scrubbed, redacted, its lost types noted), not kept;
        `returns` validates the tool's return annotation."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        written, types, annotated = written_result(result, returns)
        data = self.clean({'tool': tool, 'args': args, 'result': written})
        # Beside what the hooks see, as for exchanges; what scrubbing left must still fit the annotation.
        data['types'] = types
        data['annotated'] = annotated and replayed_result(data.get('result'), types, True, returns)[1] is None
        return self._entry(RecordedToolCall, data, 'a tool call')

    def _entry(self, kind: type[_Entry], data: dict[str, Any], what: str) -> _Entry:
        """`data`, as the hooks left it, validated as `kind` (an exchange, a tool call)."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        try:
            return kind.model_validate(data)
        except ValidationError as error:
            raise CassetteError(
                f'the redaction hook returned {what} that is not one: {clip(str(error))}',
                path=path_detail(self.path),
                reason='invalid',
            ) from None

    def _keep(
        self, key: str, view: dict[str, Any], response: ModelResponse, events: list[ModelResponseStreamEvent] | None
    ) -> None:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        dumped = Exchange.dump_response(response)
        if events is not None and self.scrub and scrub_data(dumped) != dumped:
            # A secret split across deltas matches no pattern: the stream keeps whole parts only
            # (the replay still starts and ends each part), which scrub like the response.
            events = [
                dataclasses.replace(event, part=response.parts[event.index])
                if isinstance(event, PartStartEvent | PartEndEvent) and event.index < len(response.parts)
                else event
                for event in events
                if not isinstance(event, PartDeltaEvent)
            ]
        data = self.clean(
            {
                'fingerprint': key,
                'request': view,
                'response': _priced(dumped, response),
                'stream': None if events is None else Exchange.dump_events(events),
            }
        )
        data['fingerprint'] = key
        # Beside what the hooks see: which written values replay turns back into their types.
        data['types'] = Exchange.dump_types(response, events)
        exchange = self._entry(Exchange, data, 'an exchange')
        self.cassette.exchanges.append(exchange)
        self._used.add(id(exchange))
        self._by_fingerprint.setdefault(key, []).append(exchange)
        if self._by_clean is not None:
            _index_clean(self._by_clean, exchange)
        wrapped = self._recorder()
        profile = plain_profile(wrapped.profile)
        self.cassette.model = CassetteInfo(model_name=wrapped.model_name, system=wrapped.system, profile=profile)
        self.save()


class _RecordedModel(AnsweringModel):
    """The recorded model's stand-in in replay; asked for an answer, it says a real model is needed."""

    deterministic = False  # it stands for the recorded model, which a retry may ask again

    def __init__(self, owner: CassetteModel) -> None:
        super().__init__(profile=restored_profile(owner.cassette.model.profile))
        self._owner = owner

    @property
    def model_name(self) -> str:
        return self._owner.cassette.model.model_name

    @property
    def system(self) -> str:
        return self._owner.cassette.model.system or 'cassette'

    def no_model(self) -> CassetteError:
        owner = self._owner
        said = f'needs a recording (mode {owner.mode!r}) but CassetteModel wraps no model; {owner.advice.real_model()}'
        return cassette_error(owner.path, said, reason='no_model')

    async def _respond(self, messages: list[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        raise self.no_model()


def runs_double(runs: list[RecordedRun], name: str = 'replay') -> AgentDouble:
    """An `AgentDouble` playing a cassette's runs: per run, a script chosen by its prompt."""
    prompts = Counter(run.prompt for run in runs)
    scripts: list[Script] = []
    for index, run in enumerate(runs):
        steps: list[Step] = [tuple(Call(c.tool, c.args) for c in step) for step in run.steps]
        steps.append(Output(run.output))
        # A prompt recorded more than once is answered by its recordings in turn.
        times = 1 if prompts[run.prompt] > 1 else None
        scripts.append(Script(*steps, when=Prompt(run.prompt), name=f'recorded run {index + 1}', times=times))
    return AgentDouble(*scripts, name=name)


_STAND_INS: dict[str, object] = {'integer': 0, 'number': 0, 'boolean': False}


def _typed_placeholders(
    response: ModelResponse, events: list[ModelResponseStreamEvent] | None, parameters: ModelRequestParameters
) -> tuple[ModelResponse, list[ModelResponseStreamEvent] | None]:
    """A replayed response (and stream) with each placeholder for a scrubbed number or boolean argument
    made `0` or `false`: `"pin": "<redacted>"` would fail validation, a retry the cassette never saw."""
    tools = {tool.name: tool for tool in (*parameters.function_tools, *parameters.output_tools)}
    if not tools or PLACEHOLDER not in str([part.args for part in response.parts if isinstance(part, ToolCallPart)]):
        return response, events
    parts = [_typed(part, tools) for part in response.parts]
    response = dataclasses.replace(response, parts=parts)
    if events is not None:
        events = [
            dataclasses.replace(event, part=_typed(event.part, tools))
            if isinstance(event, PartStartEvent | PartEndEvent)
            else event
            for event in events
        ]
    return response, events


def _typed(part: ModelResponsePart, tools: dict[str, ToolDefinition]) -> ModelResponsePart:
    if not isinstance(part, ToolCallPart) or part.tool_name not in tools:
        return part
    properties: object = tools[part.tool_name].parameters_json_schema.get('properties')
    if not isinstance(properties, dict):
        return part
    schemas = cast('dict[str, object]', properties)
    args = part.args_as_dict()
    typed = {key: _stand_in(schemas.get(key)) if value == PLACEHOLDER else value for key, value in args.items()}
    if typed == args:
        return part
    return dataclasses.replace(part, args=typed if isinstance(part.args, dict) else json.dumps(typed))


def _stand_in(schema: object) -> object:
    # `0` or `false` where the property takes a number or a boolean and no string; else the placeholder.
    fields = cast('dict[str, Any]', schema) if isinstance(schema, dict) else {}
    kinds: list[Any] = [fields.get('type')]
    if isinstance(options := fields.get('anyOf'), list):
        kinds += [
            cast('dict[str, Any]', one).get('type') for one in cast('list[Any]', options) if isinstance(one, dict)
        ]
    names = [name for kind in kinds for name in (cast('list[Any]', kind) if isinstance(kind, list) else [kind])]
    if 'string' in names:
        return PLACEHOLDER
    return next((_STAND_INS[name] for name in names if isinstance(name, str) and name in _STAND_INS), PLACEHOLDER)


def _index_clean(by_clean: dict[str, list[Exchange]], exchange: Exchange) -> None:
    written = fingerprint(exchange.request)
    if written != exchange.fingerprint:
        by_clean.setdefault(written, []).append(exchange)


def _priced(data: dict[str, Any], response: ModelResponse) -> dict[str, Any]:
    """`data` (the response as JSON) with the live response's cost, so a replay reports it."""
    usage = data.get('usage')
    if not isinstance(usage, dict) or cast('dict[str, Any]', usage).get('cost') is not None or not response.model_name:
        return data
    try:
        cost = response.cost()
    except (LookupError, ValueError, AssertionError):  # a model genai-prices does not know, usage not reported
        return data
    if response.usage.unmeasured_requests and cost.total_price == 0:
        return data  # unknown, not free (as pydantic-ai leaves it)
    return {**data, 'usage': {**cast('dict[str, Any]', usage), 'cost': str(cost.total_price)}}


def _recorded(
    exchange: Exchange, path: Path | None, *, stream: bool
) -> tuple[ModelResponse, list[ModelResponseStreamEvent] | None]:
    """The exchange's response and, for a stream, its events (a `CassetteError` if unreadable)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    try:
        return exchange.model_response(), exchange.stream_events() if stream else None
    except ValueError as error:  # pydantic's ValidationError included
        said = f'holds a response pydantic-ai cannot read: {clip(str(error))}'
        raise cassette_error(path, said, reason='invalid') from None
