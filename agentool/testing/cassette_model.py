"""`CassetteModel`: record what any pydantic-ai model answers once, replay it offline forever.

It is a pydantic-ai `WrapperModel`. In a recording mode it sends each request to the model it
wraps and keeps the exchange in the cassette (the file is rewritten after each one); in replay it
answers from the cassette, with no network, no key and no provider SDK: the wrapped model is then
a stand-in named and profiled as the recorded one. Requests are matched by fingerprint (see
`agentool.testing.cassette`) and, for identical requests, by how often that fingerprint has been
seen, so several agents in one test, and concurrent runs, replay deterministically. A cassette of
runs (recorded by `Recorder`, no exchanges) is replayed by an `AgentDouble` playing them.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_args

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import RunContext, native_tools
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponseStreamEvent
from pydantic_ai.models import (
    CompletedStreamedResponse,
    KnownModelName,
    Model,
    ModelRequestParameters,
    StreamedResponse,
    infer_model,
)
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.native_tools import AbstractNativeTool
from pydantic_ai.settings import ModelSettings

from ..errors import CassetteError, clip, quote
from ._advice import RecordAdvice, current_advice
from ._cleaning import Cleaner, Redactor, typed_placeholders
from ._fingerprint import RequestViews, fingerprint, mismatch, request_view
from ._profile import plain_profile, restored_profile
from ._tool_answers import ToolAnswers
from ._tool_results import replayed_result, written_result
from .cassette import Cassette, CassetteInfo, Exchange, RecordedRun, RecordedToolCall, RecordMode, cassette_path
from .double import AgentDouble
from .script import Call, Output, Prompt, Script, Step

__all__ = ('CassetteModel', 'Redactor', 'runs_double')

_MODES: tuple[str, ...] = get_args(RecordMode)


@dataclass(init=False)
class CassetteModel(WrapperModel):
    """A model that records the model it wraps to a cassette, or replays the cassette without it.

    Args:
        wrapped: The real model (any `Model` or model name); `None` is enough to replay. A model
            name is made into a model only when this cassette records, so a replay needs neither
            the provider's SDK nor its key (and a misspelt name shows only when recording).
        cassette: The cassette file (a `str` or `Path`) or a `Cassette` kept in memory.
        mode: `none` (replay only; the default, for CI), `once` (record when the file is missing),
            `new_episodes` (replay what matches, record the rest) or `all` (re-record).
        redact: Applied to each new exchange (and tool call) before anything is written, on top
            of the default scrubbing (see `Redactor`).
        scrub: Replace secrets in known shapes (provider API keys, bearer tokens, cloud access
            keys, URL credentials and query tokens) before anything is written; on by default
            (see `agentool.testing.scrub`).

    Raises:
        CassetteError: an unknown mode, or a cassette file that cannot be read (missing in
            mode `none`, too large, not a cassette).

    Example:
        ```python {test="skip"}
        model = CassetteModel('openai:gpt-5', cassette='cassettes/weather.json', mode='once')
        result = await agent.run('Weather in Paris?', model=model)
        ```
    """

    wrapped: Model
    """The model a recording mode calls. In replay: the model given (never called), else a
    stand-in named and profiled as the recorded model; for a cassette of runs, the `AgentDouble`
    playing them."""
    cassette: Cassette
    """The exchanges recorded or loaded so far."""
    path: Path | None
    """Where the cassette is written; `None` for one kept in memory."""
    mode: RecordMode
    redact: Redactor | None
    scrub: bool
    advice: RecordAdvice = field(repr=False)
    """How this model's errors say to record: its mode, or, for a model the pytest plugin's
    `agentool_cassette` fixture made, the `--agentool-record-mode` command for its test."""
    _records: bool = field(repr=False)
    _plays_runs: bool = field(repr=False)
    _by_fingerprint: dict[str, list[Exchange]] = field(repr=False)
    _by_clean: dict[str, list[Exchange]] | None = field(repr=False)
    """Exchanges by the request as written, made at the first request not found as sent."""
    _seen: Counter[str] = field(repr=False)
    _used: set[int] = field(repr=False)
    _cleaner: Cleaner = field(repr=False)
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
        self.advice = current_advice()
        self._cleaner = Cleaner(scrub=scrub, redact=redact)
        if isinstance(cassette, Cassette):
            # An empty cassette in memory counts as missing, for mode 'once'.
            self.path, loaded = None, cassette
            exists = bool(cassette.exchanges or cassette.runs or cassette.tool_calls)
            if mode == 'all':
                cassette.exchanges.clear()
                cassette.runs.clear()
                cassette.tool_calls.clear()
        else:
            self.path = cassette_path(cassette)
            exists = self.path.exists()
            # In mode 'all' the file is replaced whole by what this model records.
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
            self._index(exchange)
        self._seen = Counter()
        self._used = set()
        self._views = RequestViews()

    def _wrapped(self, given: object, loaded: Cassette) -> Model:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if self._plays_runs:
            # Never the model given: in replay it is not to be called.
            return runs_double(loaded.runs)
        # A model named by string is made only when something is recorded: a replay in CI then
        # needs neither the provider's SDK nor its API key.
        if given is None or (isinstance(given, str) and not self._records):
            return _RecordedModel(self)
        return _model(given)

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
        # The wrapped model applies its own settings when it is called; leaving them out of the
        # request seen here keeps its fingerprint the same with and without the wrapped model.
        return None

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if self._plays_runs:
            return await self.wrapped.request(messages, model_settings, model_request_parameters)
        exchange, view, key = self._find(messages, model_settings, model_request_parameters)
        if exchange is not None:
            return typed_placeholders(_response(exchange, self.path), None, model_request_parameters)[0]
        wrapped = self._recorder()
        response = await wrapped.request(messages, model_settings, model_request_parameters)
        self._keep(key, view, response, None)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if self._plays_runs:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as played:
                yield played
            return
        exchange, view, key = self._find(messages, model_settings, model_request_parameters)
        if exchange is not None:
            response, played = typed_placeholders(
                _response(exchange, self.path), _events(exchange, self.path), model_request_parameters
            )
            events = played or []
        else:
            wrapped = self._recorder()
            # The live stream is drained before the run sees it, so a recording run and its
            # replays see the very same events.
            async with wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream:
                events = [event async for event in stream]
                response = stream.get()
            self._keep(key, view, response, events)
        yield CompletedStreamedResponse(
            response, model_request_parameters=model_request_parameters, replay_events=events or True
        )

    def _find(
        self, messages: list[ModelMessage], settings: ModelSettings | None, parameters: ModelRequestParameters
    ) -> tuple[Exchange | None, dict[str, Any], str]:
        """The exchange recorded for this request (its occurrence counted), or `None` when this mode
        records it; with the request's view and fingerprint (an empty view when found by the views
        kept of the run's messages). See `_count_and_find`."""
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if not self._records:
            # Replay only: the run's history is viewed once, not at every request. A miss (or a
            # message changed in place) is looked up again from a view made afresh.
            key = self._views.fingerprint(messages, settings, parameters)
            if recorded := self._by_fingerprint.get(key):
                return self._take(key, recorded), {}, key
        view = request_view(messages, settings, parameters)
        key = fingerprint(view)
        return self._count_and_find(key, view), view, key

    def _take(self, key: str, recorded: list[Exchange]) -> Exchange:
        """The recorded exchange for this occurrence of `key`, counted; past the recorded
        occurrences, the last one again (a test may repeat a request)."""
        occurrence = self._seen[key]
        self._seen[key] += 1
        exchange = recorded[min(occurrence, len(recorded) - 1)]
        self._used.add(id(exchange))
        return exchange

    def _count_and_find(self, key: str, view: dict[str, Any]) -> Exchange | None:
        """Count this occurrence of the request, then find the exchange recorded for it.

        `None` when this mode records the request instead; a `CassetteMismatchError` when nothing
        recorded answers it and this mode does not record.
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        recorded = self._by_fingerprint.get(key, [])
        if not recorded and (by_clean := self._clean_index()):
            # Not as sent: then as written (scrubbed, redacted). A replayed history holds the
            # placeholders the cassette answered with, so its requests match only that way.
            cleaned = fingerprint(self._cleaner.request(view))
            if cleaned in by_clean:
                key, recorded = f'clean:{cleaned}', by_clean[cleaned]
        if self.mode == 'all' or (self._records and self._seen[key] >= len(recorded)):
            self._seen[key] += 1
            return None
        if recorded:
            return self._take(key, recorded)
        self._seen[key] += 1
        raise mismatch(
            self._where(),
            self.mode,
            key,
            self._cleaner.request(view),
            self.cassette.exchanges,
            path=self._path(),
            advice=self.advice,
        )

    def _index(self, exchange: Exchange) -> None:
        # By the request as sent (the fingerprint) and, once a request needs it, as written
        # (scrubbed, redacted: `_clean_index`).
        self._by_fingerprint.setdefault(exchange.fingerprint, []).append(exchange)
        if self._by_clean is not None:
            self._index_clean(self._by_clean, exchange)

    def _clean_index(self) -> dict[str, list[Exchange]]:
        """The exchanges by the request as written, where that differs from the request as sent
        (made when first needed: hashing every recorded request is a cost most replays skip)."""
        if self._by_clean is None:
            self._by_clean = {}
            for exchange in self.cassette.exchanges:
                self._index_clean(self._by_clean, exchange)
        return self._by_clean

    @staticmethod
    def _index_clean(by_clean: dict[str, list[Exchange]], exchange: Exchange) -> None:
        written = fingerprint(exchange.request)
        if written != exchange.fingerprint:
            by_clean.setdefault(written, []).append(exchange)

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
            f'cassette {self._where()}',
            clean=self._cleaner.args,
            # In pytest the option records it; in code a `Replay` has no mode to change, so no hint.
            hint=f'record it with {self.advice.rerecord()}' if self.advice.in_pytest else '',
            path=self._path(),
        )

    def clean(self, data: dict[str, Any]) -> dict[str, Any]:
        """`data` (an exchange or a tool call, as JSON) as it is written: scrubbed, then redacted.

        Raises:
            CassetteError: the redaction hook returned something other than a dict.
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        return self._cleaner.clean(data, self._path())

    def keep_tool_call(
        self, tool: str, args: dict[str, Any], result: Any, returns: TypeAdapter[Any] | None = None
    ) -> RecordedToolCall:
        """Add a tool's result to the cassette (scrubbed and redacted like an exchange) and save it.

        Raises:
            CassetteError: the redaction hook returned something that is not a tool call.
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        recorded = self.written_tool_call(tool, args, result, returns)
        self.cassette.tool_calls.append(recorded)
        self.save()
        return recorded

    def written_tool_call(
        self, tool: str, args: dict[str, Any], result: Any, returns: TypeAdapter[Any] | None = None
    ) -> RecordedToolCall:
        """A tool's result as the cassette writes it (scrubbed and redacted), not yet kept, with
        the types its JSON loses (`returns` validates what the tool is annotated to return).

        Raises:
            CassetteError: the redaction hook returned something that is not a tool call.
        """
        __tracebackhide__ = True  # cassette errors point at the test, not here
        written, types, annotated = written_result(result, returns)
        data = self.clean({'tool': tool, 'args': args, 'result': written})
        # Beside what the hooks see, as for exchanges; what scrubbing left must still fit the annotation.
        data['types'] = types
        data['annotated'] = annotated and replayed_result(data.get('result'), types, True, returns)[1] is None
        try:
            return RecordedToolCall.model_validate(data)
        except ValidationError as error:
            raise CassetteError(
                f'the redaction hook returned a tool call that is not one: {clip(str(error))}',
                path=self._path(),
                reason='invalid',
            ) from None

    def _keep(
        self, key: str, view: dict[str, Any], response: ModelResponse, events: list[ModelResponseStreamEvent] | None
    ) -> None:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if events is not None and self.scrub:
            events = self._cleaner.stream(events, response)
        data = self.clean(
            {
                'fingerprint': key,
                'request': view,
                'response': _priced(Exchange.dump_response(response), response),
                'stream': None if events is None else Exchange.dump_events(events),
            }
        )
        data['fingerprint'] = key
        # Beside what the hooks see: which written values replay turns back into their types.
        data['types'] = Exchange.dump_types(response, events)
        try:
            exchange = Exchange.model_validate(data)
        except ValidationError as error:
            raise CassetteError(
                f'the redaction hook returned an exchange that is not one: {clip(str(error))}',
                path=self._path(),
                reason='invalid',
            ) from None
        self.cassette.exchanges.append(exchange)
        self._used.add(id(exchange))
        self._index(exchange)
        wrapped = self._recorder()
        profile = plain_profile(wrapped.profile)
        self.cassette.model = CassetteInfo(model_name=wrapped.model_name, system=wrapped.system, profile=profile)
        self.save()

    def _where(self) -> str:
        return _place(self.path)

    def _path(self) -> str | None:
        return _path_detail(self.path)


class _RecordedModel(Model):
    """Stands in for the real model in replay: named and profiled as the recorded model.

    Asked for an answer (a recording mode with no real model), it says the real model is needed.
    """

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
        where = _place(self._owner.path)
        return CassetteError(
            f'cassette {where} needs a recording (mode {self._owner.mode!r}) but CassetteModel '
            f'wraps no model; {self._owner.advice.real_model()}',
            path=_path_detail(self._owner.path),
            reason='no_model',
        )

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        raise self.no_model()


def runs_double(runs: list[RecordedRun], name: str = 'replay') -> AgentDouble:
    """An `AgentDouble` playing a cassette's runs: one script per run, chosen by its exact prompt,
    making the recorded tool calls, then giving the recorded output."""
    prompts = Counter(run.prompt for run in runs)
    scripts: list[Script] = []
    for index, run in enumerate(runs):
        steps: list[Step] = [tuple(Call(c.tool, c.args) for c in step) for step in run.steps]
        steps.append(Output(run.output))
        # A prompt recorded more than once is answered by its recordings in turn.
        times = 1 if prompts[run.prompt] > 1 else None
        scripts.append(Script(*steps, when=Prompt(run.prompt), name=f'recorded run {index + 1}', times=times))
    return AgentDouble(*scripts, name=name)


def _model(wrapped: object) -> Model[Any]:
    __tracebackhide__ = True  # cassette errors point at the test, not here
    if isinstance(wrapped, Model):
        return cast('Model[Any]', wrapped)
    if not isinstance(wrapped, str):
        raise CassetteError(
            f'CassetteModel wraps a pydantic-ai Model, a model name or None; got {quote(wrapped)}', reason='model'
        )
    try:
        return infer_model(wrapped)
    except (UserError, ValueError, ImportError) as error:
        raise CassetteError(
            f'CassetteModel cannot make model {quote(wrapped)}: {clip(str(error))}', reason='model'
        ) from None


def _priced(data: dict[str, Any], response: ModelResponse) -> dict[str, Any]:
    """`data` (the response as JSON) with the cost pydantic-ai gives the live response, when genai-prices
    knows its model: a replay then reports the recorded cost, and does not price the response again."""
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


def _response(exchange: Exchange, path: Path | None) -> ModelResponse:
    __tracebackhide__ = True  # cassette errors point at the test, not here
    try:
        return exchange.model_response()
    except (ValidationError, ValueError) as error:
        raise _corrupt(path, error) from None


def _events(exchange: Exchange, path: Path | None) -> list[ModelResponseStreamEvent]:
    __tracebackhide__ = True  # cassette errors point at the test, not here
    try:
        return exchange.stream_events()
    except ValidationError as error:
        raise _corrupt(path, error) from None


def _corrupt(path: Path | None, error: Exception) -> CassetteError:
    where = _place(path)
    return CassetteError(
        f'cassette {where} holds a response pydantic-ai cannot read: {clip(str(error))}',
        path=_path_detail(path),
        reason='invalid',
    )


def _place(path: Path | None) -> str:
    """Where a cassette is, for messages."""
    return repr(str(path)) if path is not None else '(in memory)'


def _path_detail(path: Path | None) -> str | None:
    """Where a cassette is, for `details['path']`: the path as text (as the file errors give it), `None` in memory."""
    return str(path) if path is not None else None
