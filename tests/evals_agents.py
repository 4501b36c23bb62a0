"""An agent, scripted trajectories and their recordings, for the offline-evaluation tests.

The scenarios at the bottom set a global tracer provider (pydantic-evals collects a case's spans
from it), so `tests/test_evals.py` runs them in a process of their own: a global provider would
change how other tests' agentools trace (lean runs) in a shared pytest worker.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, ToolOutput
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.capabilities import AbstractCapability, Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from agentool.testing import CassetteModel, CassetteTools


class Forecast(BaseModel):
    city: str
    temperature_c: float


def make_agent() -> Agent[None, Forecast | str]:
    agent: Agent[None, Forecast | str] = Agent(
        output_type=[ToolOutput(Forecast, name='final_result'), str],
        instructions='Find the city, then its weather.',
    )
    calls: list[str] = []

    @agent.tool_plain
    def find_city(name: str) -> dict[str, float]:
        """Coordinates of a city."""
        calls.append(f'find_city {name}')
        if name != name.title():
            raise ModelRetry('use the capitalised city name')
        return {'Paris': {'lat': 48.86, 'lon': 2.35}, 'Rome': {'lat': 41.9, 'lon': 12.5}}[name]

    @agent.tool_plain
    def get_weather(lat: float, lon: float) -> dict[str, float]:
        """Temperature at the coordinates."""
        calls.append(f'get_weather {lat} {lon}')
        return {'temperature_c': 14.0 if lat > 45 else 21.0}

    agent_calls[id(agent)] = calls
    return agent


agent_calls: dict[int, list[str]] = {}
"""The real tool calls each agent made, by `id(agent)`: a replay must make none."""

PARIS = ToolCallPart('find_city', {'name': 'Paris'})
ROME = ToolCallPart('find_city', {'name': 'Rome'})
PARIS_WEATHER = ToolCallPart('get_weather', {'lat': 48.86, 'lon': 2.35})
ROME_WEATHER = ToolCallPart('get_weather', {'lat': 41.9, 'lon': 12.5})

TRAJECTORIES: dict[str, tuple[str, list[list[ModelResponsePart]]]] = {
    'sequential': ('Weather in Paris?', [[PARIS], [PARIS_WEATHER], [TextPart('Rain, 14 C')]]),
    'retry': (
        'Weather in paris?',
        [[ToolCallPart('find_city', {'name': 'paris'})], [PARIS], [PARIS_WEATHER], [TextPart('14 C in Paris')]],
    ),
    'parallel': ('Paris or Rome?', [[PARIS, ROME], [PARIS_WEATHER, ROME_WEATHER], [TextPart('Rome is warmer')]]),
    'output_tool': (
        'Forecast for Rome',
        [[ROME], [ROME_WEATHER], [ToolCallPart('final_result', {'city': 'Rome', 'temperature_c': 21})]],
    ),
}
"""Name: (prompt, the model's answers in order). `retry` has a tool raise ModelRetry; `output_tool`
ends through the output tool."""


def scripted(answers: Sequence[Sequence[ModelResponsePart]]) -> FunctionModel:
    """A model giving `answers` in order, one per request of the run."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(message, ModelResponse) for message in messages)
        return ModelResponse(parts=list(answers[step]))

    return FunctionModel(answer, model_name='scripted')


def tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def record(
    agent: Agent[None, Any], name: str, folder: Path, *, instrument: InstrumentationSettings | None = None
) -> AgentRunResult[Any]:
    """Run trajectory `name` live (scripted model, real tools), recording `folder/name.json`."""
    prompt, answers = TRAJECTORIES[name]
    model = CassetteModel(scripted(answers), cassette=folder / f'{name}.json', mode='all')
    capabilities: list[AbstractCapability[Any]] = [CassetteTools(model)]
    if instrument is not None:
        capabilities.append(Instrumentation(instrument))
    result = await agent.run(prompt, model=model, capabilities=capabilities)
    model.save()
    return result


def tool_spans(spans: Sequence[ReadableSpan]) -> list[tuple[str, Any, Any, str]]:
    """What the evaluators read of each span: name, tool, arguments, status; sorted."""
    seen = [
        (
            span.name,
            (span.attributes or {}).get('gen_ai.tool.name'),
            (span.attributes or {}).get('gen_ai.tool.call.arguments'),
            span.status.status_code.name,
        )
        for span in spans
        if span.name.startswith(('execute_tool', 'chat', 'invoke_agent'))
    ]
    return sorted(seen, key=repr)


def _evaluators() -> list[Any]:
    from pydantic_evals.evaluators import (
        ArgumentCorrectness,
        HasMatchingSpan,
        MaxModelRequests,
        MaxToolCalls,
        ToolCorrectness,
        TrajectoryMatch,
    )

    both = ['find_city', 'get_weather']
    return [
        ToolCorrectness(expected_tools=both),
        ToolCorrectness(expected_tools=both, include_failed=True, evaluation_name='tools_with_failed'),
        TrajectoryMatch(expected_trajectory=both, order='exact', evaluation_name='exact'),
        TrajectoryMatch(expected_trajectory=both, order='in_order', evaluation_name='in_order'),
        TrajectoryMatch(expected_trajectory=['get_weather', 'find_city'], order='any_order', evaluation_name='any'),
        TrajectoryMatch(expected_trajectory=both, include_failed=True, evaluation_name='exact_with_failed'),
        ArgumentCorrectness(tool_name='find_city', expected_arguments={'name': 'Paris'}),
        ArgumentCorrectness(
            tool_name='find_city',
            expected_arguments={'name': 'paris'},
            include_failed=True,
            evaluation_name='failed_args',
        ),
        MaxToolCalls(max_calls=2),
        MaxToolCalls(max_calls=2, include_failed=False, evaluation_name='max_ok_calls'),
        MaxModelRequests(max_requests=3),
        HasMatchingSpan(query={'name_equals': 'execute_tool get_weather'}, evaluation_name='weather_span'),
        HasMatchingSpan(query={'has_status': 'error'}, evaluation_name='an_error'),
    ]


def _verdicts(report: Any) -> dict[str, dict[str, Any]]:
    """Each case's evaluator results, value and reason, and its failures."""
    found: dict[str, dict[str, Any]] = {}
    for case in report.cases:
        results = {**case.assertions, **case.scores, **case.labels}
        found[case.name] = {name: (result.value, result.reason) for name, result in results.items()}
        found[case.name]['failures'] = [failure.name for failure in case.evaluator_failures]
    found['failed cases'] = {failure.name: failure.error_message for failure in report.failures}
    return found


async def scenario_live_and_replayed_verdicts_agree(folder: Path) -> None:
    """Every agentic evaluator gives each recording the verdict it gave the live run."""
    from opentelemetry import trace
    from pydantic_evals import Case, Dataset

    from agentool.testing.evals import recorded_dataset, replay_task

    trace.set_tracer_provider(TracerProvider())
    settings = InstrumentationSettings()  # the global provider, where pydantic-evals reads spans
    agent = make_agent()
    live_cases = [Case(name=name, inputs=name) for name in TRAJECTORIES]

    async def live(name: str) -> Any:
        return (await record(agent, name, folder, instrument=settings)).output

    live_dataset = Dataset[str, Any, Any](name='live', cases=live_cases, evaluators=_evaluators())
    live_report = await live_dataset.evaluate(live, progress=False)
    real_calls = len(agent_calls[id(agent)])
    dataset = recorded_dataset(folder, evaluators=_evaluators())
    replay_report = await dataset.evaluate(replay_task(agent, folder, instrument=settings), progress=False)
    assert len(agent_calls[id(agent)]) == real_calls, 'a replay ran a tool'
    live_verdicts, replayed = _verdicts(live_report), _verdicts(replay_report)
    assert replayed == live_verdicts, (replayed, live_verdicts)
    # Not vacuous: the evaluators disagree between cases, and the retry's failed attempt shows.
    exact = {verdict['exact'][0] for name, verdict in live_verdicts.items() if name != 'failed cases'}
    assert exact == {True, False}
    assert live_verdicts['retry']['an_error'][0] is True
    assert live_verdicts['sequential']['an_error'][0] is False
    print(sorted(live_verdicts))


async def scenario_a_dataset_of_recordings_evaluates_with_model_requests_blocked(folder: Path) -> None:
    """A dataset of recordings scores offline: expected outputs hold, no model request is made."""
    from opentelemetry import trace
    from pydantic_ai import models
    from pydantic_evals.evaluators import EqualsExpected, MaxModelRequests

    from agentool.testing.evals import Drift, recorded_dataset, replay_task

    trace.set_tracer_provider(TracerProvider())
    agent = make_agent()
    for name in TRAJECTORIES:
        await record(agent, name, folder)
    models.ALLOW_MODEL_REQUESTS = False  # and the replay blocks them itself
    dataset = recorded_dataset(folder, evaluators=[EqualsExpected(), MaxModelRequests(max_requests=4), Drift()])
    report = await dataset.evaluate(replay_task(agent, folder, instrument=InstrumentationSettings()), progress=False)
    assert not report.failures, report.failures
    assert len(report.cases) == len(TRAJECTORIES) >= 3
    for case in report.cases:
        assert case.assertions['EqualsExpected'].value is True, case.name
        assert case.assertions['MaxModelRequests'].value is True, case.name
        assert case.assertions['Drift'].value is True, (case.name, case.assertions['Drift'].reason)
    print(sorted(case.name for case in report.cases))


if __name__ == '__main__':
    asyncio.run(globals()[sys.argv[1]](Path(sys.argv[2])))
