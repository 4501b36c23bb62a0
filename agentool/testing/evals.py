"""Recorded runs in pydantic-evals: span trees, datasets, frozen-tools experiments and a drift evaluator."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from pydantic_ai import Agent, ModelMessagesTypeAdapter, ModelRetry, RunContext
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.capabilities import AbstractCapability, Instrumentation
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models import Model, override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_core import to_jsonable_python

from .._bounds import quote
from .._options import check_choice, check_instance
from ..errors import ConfigurationError, MissingExtraError
from ._fingerprint import part_contents
from ._tool_results import Home, ToolAnswers
from .cassette import Cassette, RecordedCall, RecordedToolCall
from .cassette_model import CassetteModel
from .cassette_tools import AnsweringTools, Run
from .diff import diff_runs
from .log import CallLog, CallRecord
from .trajectory import trajectory

try:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_evals import Case, Dataset
    from pydantic_evals.dataset import set_eval_attribute
    from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext
    from pydantic_evals.otel.span_tree import SpanTree
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise MissingExtraError(
        "agentool.testing.evals needs the 'evals' extra: pip install 'agentool[evals]'", extra='evals'
    ) from error

__all__ = (
    'CaseMetadata',
    'Drift',
    'FrozenTools',
    'MESSAGES_ATTRIBUTE',
    'Recorded',
    'Unrecorded',
    'frozen_tools_task',
    'recorded_dataset',
    'recorded_prompt',
    'replay_recorded',
    'replay_task',
    'span_tree',
)

MESSAGES_ATTRIBUTE = 'agentool.messages'
"""The evaluation attribute holding a case's run messages (JSON), which `Drift` reads."""

Unrecorded = Literal['fail', 'run']
"""What `FrozenTools` does with an unrecorded call: fail (`UnrecordedCallError`) or run the real tool."""

CaseMetadata = dict[str, str]
"""A recorded case's metadata: `cassette`, the file it came from."""


@dataclass
class FrozenTools(AnsweringTools):
    """Answers every function tool call from a recording by tool name and canonical arguments, never order;
    a call that raised `ModelRetry` when recorded raises it again."""

    cassette: Cassette
    unrecorded_calls: Unrecorded = 'fail'
    source: str = 'the recording'
    calls: CallLog = field(default_factory=CallLog, init=False)
    unrecorded: list[RecordedCall] = field(default_factory=list[RecordedCall], init=False)
    _answers: ToolAnswers = field(init=False, repr=False)
    _retries: dict[str, deque[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_instance('cassette', self.cassette, Cassette)
        check_choice('unrecorded_calls', self.unrecorded_calls, ('fail', 'run'))
        self._answers = ToolAnswers(self.cassette.tool_calls, self.source)
        self._retries = _retries(trajectory(self.cassette).calls)

    def add_retries(self, retries: dict[str, deque[str]]) -> None:
        """Recorded retry messages to raise, per tool, in order (for a run read from its messages)."""
        for tool, messages in retries.items():
            self._retries.setdefault(tool, deque()).extend(messages)

    async def _unanswered(self, ctx: RunContext[Any], call: ToolCallPart, where: Home, run: Run) -> Any:
        if retries := self._retries.get(call.tool_name):
            raise ModelRetry(retries.popleft())
        sent = call.args_as_dict()
        if self.unrecorded_calls == 'fail':
            raise self._answers.unrecorded(call.tool_name, sent)
        self.unrecorded.append(RecordedCall(tool=call.tool_name, args=sent))
        return await run()


def _retries(calls: Iterable[CallRecord]) -> dict[str, deque[str]]:
    """The retry messages tools sent back, per tool, in order."""
    retries: dict[str, deque[str]] = {}
    for call in calls:
        if call.outcome == 'retried' and isinstance(call.result, str):
            retries.setdefault(call.tool, deque()).append(call.result)
    return retries


def _cassette(source: Cassette | str | os.PathLike[str]) -> Cassette:
    if isinstance(source, Cassette):
        return source
    if isinstance(cast(object, source), str | os.PathLike):
        return Cassette.load(source)
    raise ConfigurationError(f'a recording is a Cassette or its path; got {quote(source)}', option='source')


def recorded_prompt(source: Cassette | str | os.PathLike[str]) -> str:
    """The prompt of the (first) run a cassette recorded (a `ConfigurationError` when it holds none)."""
    cassette = _cassette(source)
    if cassette.runs:
        return cassette.runs[0].prompt
    for exchange in cassette.exchanges:
        prompts = part_contents(exchange.request.get('messages', []), 'user-prompt')
        if texts := [content for content in prompts if isinstance(content, str)]:
            return texts[0]
    raise ConfigurationError('the cassette holds no text prompt to replay', option='source')


Recorded = Cassette | str | os.PathLike[str] | AgentRunResult[Any] | Sequence[ModelMessage]
"""What a replay reads: a cassette (or its file), or a finished run (its result or messages)."""


async def replay_recorded(
    agent: Agent[Any, Any],
    source: Recorded,
    *,
    prompt: str | None = None,
    deps: Any = None,
    instrument: InstrumentationSettings | None = None,
) -> AgentRunResult[Any]:
    """Replay a recorded run through `agent`, model requests blocked, model and tools answered as recorded
    (a `CassetteMismatchError` or `UnrecordedCallError` says what the agent now does differently)."""
    model: Model
    if isinstance(source, AgentRunResult) or (isinstance(source, Sequence) and not isinstance(source, str)):
        messages = source.all_messages() if isinstance(source, AgentRunResult) else source
        tools, model, recorded = _from_messages(list(cast('Sequence[ModelMessage]', messages)))
    else:
        cassette = _cassette(source)
        tools, model = FrozenTools(cassette), CassetteModel(None, cassette=cassette)
        recorded = recorded_prompt(cassette)
    with override_allow_model_requests(False), agent.override(model=model):
        prompt = recorded if prompt is None else prompt
        return await agent.run(prompt, deps=deps, capabilities=_capabilities(tools, instrument))


def _capabilities(tools: FrozenTools, instrument: InstrumentationSettings | None) -> list[AbstractCapability[Any]]:
    return [tools] if instrument is None else [tools, Instrumentation(instrument)]


def _from_messages(messages: list[ModelMessage]) -> tuple[FrozenTools, Model, str]:
    """The tools, model and prompt that replay a finished run's messages."""
    responses = [message for message in messages if isinstance(message, ModelResponse)]
    requests = [message for message in messages if isinstance(message, ModelRequest)]
    prompts = [
        p.content for m in requests for p in m.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]
    if not prompts or not responses:
        raise ConfigurationError('the run holds no text prompt and model response to replay', option='source')
    calls = [call for call in trajectory(messages).calls if call.returned]
    results = [RecordedToolCall(tool=c.tool, args=c.args, result=c.result) for c in calls if c.outcome != 'retried']

    def answer(sent: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(message, ModelResponse) for message in sent)
        if step >= len(responses):
            raise ConfigurationError(f'the replayed run asked the model more than the {len(responses)} recorded times')
        return responses[step]

    tools = FrozenTools(Cassette(tool_calls=results), source='the run')
    tools.add_retries(_retries(calls))
    return tools, FunctionModel(answer, model_name=responses[0].model_name or 'recorded'), prompts[0]


async def span_tree(
    agent: Agent[Any, Any],
    source: Recorded,
    *,
    prompt: str | None = None,
    deps: Any = None,
    include_content: bool = True,
) -> SpanTree:
    """The spans of the replayed run as a pydantic-evals `SpanTree` (a tracer provider of its own)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=include_content)
    await replay_recorded(agent, source, prompt=prompt, deps=deps, instrument=settings)
    tree = SpanTree()
    tree.add_readable_spans(list(exporter.get_finished_spans()))
    return tree


def recorded_dataset(
    folder: str | os.PathLike[str],
    *,
    evaluators: Sequence[Evaluator[str, Any, CaseMetadata]] = (),
    name: str | None = None,
) -> Dataset[str, Any, CaseMetadata]:
    """A pydantic-evals `Dataset` with a case per cassette in `folder` (see the evaluating guide); two
    cassettes of one prompt are a `ConfigurationError`: a task gets the prompt only."""
    cases: list[Case[str, Any, CaseMetadata]] = []
    for prompt, (file, cassette) in _by_prompt(folder).items():
        recorded = trajectory(cassette)
        expected = to_jsonable_python(recorded.output) if recorded.has_output else None
        cases.append(Case(name=file.stem, inputs=prompt, expected_output=expected, metadata={'cassette': str(file)}))
    return Dataset[str, Any, CaseMetadata](name=name or Path(folder).name, cases=cases, evaluators=list(evaluators))


def _by_prompt(folder: str | os.PathLike[str]) -> dict[str, tuple[Path, Cassette]]:
    path = Path(folder)
    if not path.is_dir():
        raise ConfigurationError(f'{str(path)!r} is not a folder of cassettes', option='folder', value=str(path))
    files = sorted(path.glob('*.json'))
    if not files:
        raise ConfigurationError(f'{str(path)!r} holds no cassette (*.json)', option='folder', value=str(path))
    found: dict[str, tuple[Path, Cassette]] = {}
    for file in files:
        cassette = Cassette.load(file)
        prompt = recorded_prompt(cassette)
        if prompt in found:
            raise ConfigurationError(
                f'cassettes {found[prompt][0].name!r} and {file.name!r} record the same prompt {quote(prompt)}',
                option='folder',
                value=str(folder),
            )
        found[prompt] = file, cassette
    return found


def _keep_messages(result: AgentRunResult[Any]) -> Any:
    # For `Drift`, and the output as JSON data, comparable with the recorded expected output.
    set_eval_attribute(MESSAGES_ATTRIBUTE, ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode='json'))
    return to_jsonable_python(result.output)


def replay_task(
    agent: Agent[Any, Any],
    folder: str | os.PathLike[str],
    *,
    deps: Any = None,
    instrument: InstrumentationSettings | None = None,
) -> Callable[[str], Awaitable[Any]]:
    """The task of a `recorded_dataset`: the case's cassette replayed through `agent`, its output as JSON."""
    recordings = _by_prompt(folder)

    async def replay(prompt: str) -> Any:
        cassette = _recording(recordings, prompt)
        return _keep_messages(await replay_recorded(agent, cassette, prompt=prompt, deps=deps, instrument=instrument))

    return replay


def frozen_tools_task(
    agent: Agent[Any, Any],
    folder: str | os.PathLike[str],
    *,
    model: Model | None = None,
    deps: Any = None,
    unrecorded_calls: Unrecorded = 'fail',
    instrument: InstrumentationSettings | None = None,
) -> Callable[[str], Awaitable[Any]]:
    """A task running `agent` live (or with `model`), its tools answered by `FrozenTools` from the case's
    cassette; with `unrecorded_calls='run'`, the calls it ran for real are its `unrecorded` attribute."""
    recordings = _by_prompt(folder)
    check_choice('unrecorded_calls', unrecorded_calls, ('fail', 'run'))

    async def run(prompt: str) -> Any:
        tools = FrozenTools(_recording(recordings, prompt), unrecorded_calls=unrecorded_calls)
        result = await agent.run(prompt, model=model, deps=deps, capabilities=_capabilities(tools, instrument))
        if tools.unrecorded:
            set_eval_attribute('unrecorded', [call.model_dump(mode='json') for call in tools.unrecorded])
        return _keep_messages(result)

    return run


def _recording(recordings: dict[str, tuple[Path, Cassette]], prompt: str) -> Cassette:
    if prompt not in recordings:
        raise ConfigurationError(f'no cassette records the prompt {quote(prompt)}', option='inputs')
    return recordings[prompt][1]


@dataclass(repr=False)
class Drift(Evaluator[str, Any, CaseMetadata]):
    """Whether the case's run did what its recording (`baseline`, else its cassette) did, per `diff_runs`."""

    baseline: str | None = None
    """A cassette path to compare every case with, instead of the case's own."""

    def evaluate(self, ctx: EvaluatorContext[str, Any, CaseMetadata]) -> EvaluationReason:
        baseline = self.baseline or (ctx.metadata or {}).get('cassette')
        messages = ctx.attributes.get(MESSAGES_ATTRIBUTE)
        if baseline is None or messages is None:
            return EvaluationReason(value=False, reason='no recording or no run messages to compare')
        diff = diff_runs(Path(baseline), ModelMessagesTypeAdapter.validate_python(messages))
        return EvaluationReason(value=diff.same, reason=str(diff))
