"""The one operation sequence (`agentool.core.operation`): what every surface gets from it alike."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from agentool import (
    AgenToolCapability,
    AgenToolInjector,
    AgenToolNotFoundError,
    ConfigurationError,
    InputValidationError,
    RoutingConfig,
    ToolRetryError,
    create_agentool,
    get_injector,
)
from agentool.core import operation
from agentool.core.request import Frame, frame
from agentool.telemetry import (
    AGENTOOL_ATTRIBUTE,
    CALLS_METRIC,
    ERROR_TYPE_ATTRIBUTE,
    ERRORS_METRIC,
    OPERATION_ATTRIBUTE,
    OPERATION_NAME_ATTRIBUTE,
    SURFACE_ATTRIBUTE,
    TOOL_NAME_ATTRIBUTE,
)
from tests.agentools import CalcInput, make_calc


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        metric.name: list(metric.data.data_points)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
    }


async def test_an_untraced_direct_call_is_measured_by_its_injectors_meter_provider() -> None:
    make_calc()
    reader = InMemoryMetricReader()
    injector = get_injector()
    injector.meter_provider = MeterProvider(metric_readers=[reader])
    assert await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}) == 3.0
    with pytest.raises(ZeroDivisionError):
        await injector.call('calc', {'operation': 'div', 'a': 1, 'b': 0})
    found = _metrics(reader)
    calls = {(p.attributes[OPERATION_ATTRIBUTE], p.attributes[SURFACE_ATTRIBUTE]): p.value for p in found[CALLS_METRIC]}
    assert calls == {('add', 'direct'): 1, ('div', 'direct'): 1}
    [error] = found[ERRORS_METRIC]
    assert error.attributes[ERROR_TYPE_ATTRIBUTE] == 'ZeroDivisionError'
    assert error.attributes[AGENTOOL_ATTRIBUTE] == 'calc'


async def test_an_untraced_direct_call_without_a_meter_provider_skips_telemetry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_calc()

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError('an untraced, unmeasured direct call opened an operation span')

    monkeypatch.setattr(operation, 'operation_span', refused)
    assert await get_injector().call('calc', '{"operation": "add", "a": 1, "b": 2}') == 3.0


def test_an_injectors_meter_provider_must_be_one() -> None:
    with pytest.raises(ConfigurationError, match='meter_provider'):
        AgenToolInjector(meter_provider='prometheus')  # pyright: ignore[reportArgumentType]
    with pytest.raises(ConfigurationError, match='meter_provider'):
        get_injector().meter_provider = object()  # pyright: ignore[reportAttributeAccessIssue]


async def _add_through_an_llm(provider: TracerProvider) -> tuple[Agent[None, str], AgentRunResult[str]]:
    """An instrumented LLM agent calling the `calc` agentool's manager tool once to add 1 and 2."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(part, ToolReturnPart) for message in messages for part in message.parts):
            return ModelResponse(parts=[ToolCallPart('__agentool_manager__', {'operation': 'add', 'a': 1, 'b': 2})])
        return ModelResponse(parts=[TextPart('done')])

    make_calc()
    agent = Agent(FunctionModel(answer), capabilities=[AgenToolCapability('calc')])
    instrumented = Instrumentation(InstrumentationSettings(tracer_provider=provider))
    return agent, await agent.run('add them', capabilities=[instrumented])


def _tool_spans(spans: list[ReadableSpan]) -> list[tuple[str, Any]]:
    """The spans pydantic-evals' agentic evaluators count as tool calls: `execute_tool ...` with `gen_ai.tool.name`."""
    return sorted(
        (span.name, (span.attributes or {}).get(TOOL_NAME_ATTRIBUTE))
        for span in spans
        if span.name.startswith('execute_tool ') and TOOL_NAME_ATTRIBUTE in (span.attributes or {})
    )


async def test_an_agent_runs_operation_is_an_execute_tool_span_inside_pydantic_ais_own(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    assert (await _add_through_an_llm(provider))[1].output == 'done'
    spans = {span.name: span for span in exporter.get_finished_spans()}
    own, tool = spans['execute_tool calc.add'], spans['execute_tool __agentool_manager__']
    assert own.parent is not None
    assert tool.context is not None
    assert own.parent.span_id == tool.context.span_id
    attributes = own.attributes or {}
    assert attributes[SURFACE_ATTRIBUTE] == 'agent'
    assert attributes[OPERATION_NAME_ATTRIBUTE] == 'execute_tool'
    assert TOOL_NAME_ATTRIBUTE not in attributes  # pydantic-ai's span is the call's only tool span
    assert _tool_spans(list(spans.values())) == [('execute_tool __agentool_manager__', '__agentool_manager__')]


async def test_an_agentool_run_and_its_replay_show_the_evaluators_the_same_tool_calls(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    pytest.importorskip('pydantic_evals')
    from agentool.testing.evals import span_tree

    agent, live = await _add_through_an_llm(provider)
    replayed = await span_tree(agent, live)
    counted = sorted(
        (node.name, node.attributes[TOOL_NAME_ATTRIBUTE])
        for node in replayed
        if node.name.startswith('execute_tool ') and TOOL_NAME_ATTRIBUTE in node.attributes
    )
    assert counted == [('execute_tool __agentool_manager__', '__agentool_manager__')]
    assert counted == _tool_spans(list(exporter.get_finished_spans()))


async def test_a_deterministic_run_and_the_direct_path_raise_the_same_typed_retry_error() -> None:
    async def picky(ctx: RunContext[Any], a: float, b: float) -> float:
        raise ModelRetry('try other numbers')

    agent = create_agentool('picky', CalcInput, RoutingConfig(operation_map={'add': 'picky', 'div': 'picky'}), [picky])
    prompt = '{"operation": "add", "a": 1, "b": 2}'
    with pytest.raises(ToolRetryError) as direct:
        await get_injector().call('picky', prompt)
    with pytest.raises(ToolRetryError) as run:
        await agent.run(prompt)
    assert direct.value.message == run.value.message


async def test_a_tool_sees_the_frame_of_the_injector_running_it_on_every_surface() -> None:
    seen: list[Frame | None] = []

    async def look(ctx: RunContext[Any], a: float, b: float) -> float:
        seen.append(frame.get())
        return a + b

    agent = create_agentool('look', CalcInput, RoutingConfig(operation_map={'add': 'look', 'div': 'look'}), [look])
    prompt = '{"operation": "add", "a": 1, "b": 2}'
    await get_injector().call('look', prompt)
    await agent.run(prompt)
    await Agent('agentool:look').run(prompt)
    assert [None if f is None else (f.injector, f.chain) for f in seen] == [
        (get_injector(), ('look',)),
        (get_injector(), ()),
        (get_injector(), ()),
    ]


async def test_a_direct_calls_bad_name_or_input_is_raised_where_it_is_awaited() -> None:
    make_calc()
    injector = get_injector()
    unknown = injector.call('no_such_agentool', {'operation': 'add', 'a': 1, 'b': 2})
    invalid = injector.call('calc', {'operation': 'add', 'a': 'one', 'b': 2})
    with pytest.raises(AgenToolNotFoundError):
        await unknown
    with pytest.raises(InputValidationError):
        await invalid
    assert await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}) == 3.0
