"""OpenTelemetry: pydantic-ai traces agent runs; `operation_span` traces calls made outside the agent graph."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode, Tracer
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from agentool import AgenToolInjector, ConfigurationError
from agentool.telemetry import AGENTOOL_ATTRIBUTE, OPERATION_ATTRIBUTE, SURFACE_ATTRIBUTE, operation_span
from agentool.toolset import AgenToolToolset
from examples.calculator import create_calculator
from tests.notes_agentool import create_notes

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tracer(provider: TracerProvider) -> Tracer:
    return provider.get_tracer('agentool')


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_operation_span_carries_agentool_and_operation(exporter: InMemorySpanExporter, tracer: Tracer) -> None:
    with operation_span('storage', 'read', tracer=tracer, attributes={'extra': 1}) as span:
        assert span.is_recording()
    (finished,) = exporter.get_finished_spans()
    assert finished.name == 'agentool storage.read'
    assert dict(finished.attributes or {}) == {
        AGENTOOL_ATTRIBUTE: 'storage',
        OPERATION_ATTRIBUTE: 'read',
        SURFACE_ATTRIBUTE: 'direct',
        'extra': 1,
    }


def test_nested_calls_nest_and_errors_are_recorded(exporter: InMemorySpanExporter, tracer: Tracer) -> None:
    with (
        pytest.raises(ZeroDivisionError),
        operation_span('session', 'login', tracer=tracer),
        operation_span('storage', 'read', tracer=tracer),
    ):
        raise ZeroDivisionError('boom')
    spans = by_name(exporter)
    inner, outer = spans['agentool storage.read'], spans['agentool session.login']
    assert inner.parent is not None
    assert outer.context is not None
    assert inner.parent.span_id == outer.context.span_id
    assert inner.status.status_code is StatusCode.ERROR
    assert [event.name for event in inner.events] == ['exception']


def test_a_no_op_tracer_falls_back_to_the_global_provider_which_by_default_is_absent() -> None:
    # In a fresh interpreter: no global provider is configured, so the helper returns its shared no-op.
    script = (
        'from opentelemetry.trace import NoOpTracer\n'
        'from agentool.telemetry import operation_span\n'
        "assert operation_span('a', 'b') is operation_span('c', 'd', tracer=NoOpTracer())\n"
        "with operation_span('a', 'b') as span:\n"
        '    assert not span.is_recording()\n'
    )
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    env.pop('OTEL_PYTHON_TRACER_PROVIDER', None)
    subprocess.run([sys.executable, '-c', script], env=env, check=True)


def test_the_global_provider_gets_the_agentool_tracer() -> None:
    script = (
        'from opentelemetry import trace\n'
        'from opentelemetry.sdk.trace import TracerProvider\n'
        'from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n'
        'from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n'
        'from agentool.telemetry import operation_span\n'
        'exporter = InMemorySpanExporter()\n'
        'provider = TracerProvider()\n'
        'provider.add_span_processor(SimpleSpanProcessor(exporter))\n'
        'trace.set_tracer_provider(provider)\n'
        "with operation_span('storage', 'write'):\n"
        '    pass\n'
        '(span,) = exporter.get_finished_spans()\n'
        "print(span.name, span.instrumentation_scope.name, span.attributes['agentool.surface'])\n"
    )
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    out = subprocess.run([sys.executable, '-c', script], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ['agentool', 'storage.write', 'agentool', 'direct']


async def test_an_agentool_agent_run_is_traced_by_pydantic_ai(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    calculator = create_calculator()
    calculator.instrument = InstrumentationSettings(tracer_provider=provider)
    assert (await calculator.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0
    spans = by_name(exporter)
    assert {'invoke_agent calculator', 'chat calculator', 'execute_tool __agentool_manager__'} <= set(spans)
    chat = spans['chat calculator'].attributes or {}
    assert (chat['gen_ai.system'], chat['gen_ai.request.model']) == ('agentool', 'calculator')
    tool = spans['execute_tool __agentool_manager__'].attributes or {}
    assert tool['gen_ai.tool.call.arguments'] == '{"operation":"add","a":1,"b":2}'


async def test_the_model_string_form_is_traced_with_the_instrumentation_capability(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    create_calculator()
    agent = Agent(
        'agentool:calculator', capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=provider))]
    )
    await agent.run('{"operation": "multiply", "a": 2, "b": 3}')
    assert 'chat calculator' in by_name(exporter)


async def test_toolset_calls_get_an_operation_span_inside_the_tool_span(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    create_notes()
    replies = iter([[ToolCallPart('notes_get', {'key': 'k'})], 'done'])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = next(replies)
        return ModelResponse(parts=[TextPart(reply)] if isinstance(reply, str) else list(reply))

    agent = Agent(
        FunctionModel(model),
        toolsets=[AgenToolToolset()],
        deps_type=dict,
        capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=provider))],
    )
    await agent.run('go', deps={'k': 'v'})
    spans = by_name(exporter)
    ours, tool = spans['agentool notes.get'], spans['execute_tool notes_get']
    assert ours.parent is not None
    assert tool.context is not None
    assert ours.parent.span_id == tool.context.span_id
    assert dict(ours.attributes or {}) == {
        AGENTOOL_ATTRIBUTE: 'notes',
        OPERATION_ATTRIBUTE: 'get',
        SURFACE_ATTRIBUTE: 'toolset',
    }


async def test_mcp_calls_get_an_operation_span(exporter: InMemorySpanExporter, tracer: Tracer) -> None:
    pytest.importorskip('mcp')
    from mcp import Client

    from agentool.mcp import create_mcp_server

    create_calculator()
    async with Client(create_mcp_server(tracer=tracer)) as client:
        result = await client.call_tool('calculator_divide', {'a': 1, 'b': 0})
    assert result.is_error
    span = by_name(exporter)['agentool calculator.divide']
    assert (span.attributes or {})[SURFACE_ATTRIBUTE] == 'mcp'
    assert span.status.status_code is StatusCode.ERROR


async def test_direct_calls_get_a_span_from_the_injectors_tracer_provider(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    injector = AgenToolInjector(tracer_provider=provider)
    injector.register('calculator', create_calculator())
    assert await injector.call('calculator', {'operation': 'add', 'a': 1, 'b': 2}) == 3.0
    with pytest.raises(ZeroDivisionError):
        await injector.call('calculator', {'operation': 'divide', 'a': 1, 'b': 0})
    ok, failed = exporter.get_finished_spans()
    assert (ok.name, failed.name) == ('agentool calculator.add', 'agentool calculator.divide')
    assert dict(ok.attributes or {}) == {
        AGENTOOL_ATTRIBUTE: 'calculator',
        OPERATION_ATTRIBUTE: 'add',
        SURFACE_ATTRIBUTE: 'direct',
    }
    assert failed.status.status_code is StatusCode.ERROR
    assert [event.name for event in failed.events] == ['exception']
    injector.tracer_provider = None
    await injector.call('calculator', {'operation': 'add', 'a': 1, 'b': 2})
    assert len(exporter.get_finished_spans()) == 2  # outside a trace, and no provider of its own: no span


@pytest.mark.parametrize('value', ['x', 5, object()])
def test_a_tracer_provider_that_is_not_one_is_refused_when_given(value: object, provider: TracerProvider) -> None:
    with pytest.raises(ConfigurationError, match='tracer_provider must be an OpenTelemetry TracerProvider') as caught:
        AgenToolInjector(tracer_provider=value)  # pyright: ignore[reportArgumentType]
    assert caught.value.details == {'option': 'tracer_provider', 'value': repr(value)}
    injector = AgenToolInjector(tracer_provider=provider)
    with pytest.raises(ConfigurationError, match='tracer_provider'):
        injector.tracer_provider = value  # pyright: ignore[reportAttributeAccessIssue]
    assert injector.tracer_provider is provider  # the refused value was not kept


def test_without_a_provider_of_its_own_a_direct_call_is_traced_inside_a_trace_in_progress() -> None:
    # In a fresh interpreter, since the global provider can be set once per process.
    script = (
        'import asyncio\n'
        'from opentelemetry import trace\n'
        'from opentelemetry.sdk.trace import TracerProvider\n'
        'from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n'
        'from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n'
        'from agentool import get_injector\n'
        'import examples.calculator  # registers the calculator\n'
        'exporter = InMemorySpanExporter()\n'
        'provider = TracerProvider()\n'
        'provider.add_span_processor(SimpleSpanProcessor(exporter))\n'
        'trace.set_tracer_provider(provider)\n'
        'async def main():\n'
        "    await get_injector().call('calculator', {'operation': 'add', 'a': 1, 'b': 2})\n"
        "    with trace.get_tracer('app').start_as_current_span('request'):\n"
        "        await get_injector().call('calculator', {'operation': 'multiply', 'a': 2, 'b': 3})\n"
        'asyncio.run(main())\n'
        'ours, request = exporter.get_finished_spans()\n'
        'assert ours.parent.span_id == request.context.span_id\n'
        'print(ours.name, request.name)\n'
    )
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    out = subprocess.run([sys.executable, '-c', script], env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ['agentool', 'calculator.multiply', 'request']


def test_an_unknown_surface_is_refused_not_recorded(tracer: Tracer) -> None:
    with pytest.raises(ConfigurationError, match="surface must be one of 'direct', 'toolset', 'mcp'; got 'bogus'"):
        operation_span('a', 'b', surface='bogus', tracer=tracer)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize('bad', ['x', object()])
def test_a_tracer_that_is_not_one_is_refused_when_the_span_is_asked_for(bad: object) -> None:
    with pytest.raises(ConfigurationError, match='tracer must be an OpenTelemetry Tracer') as caught:
        operation_span('a', 'b', tracer=bad)  # pyright: ignore[reportArgumentType]
    assert caught.value.details == {'option': 'tracer', 'value': repr(bad)}


@pytest.mark.parametrize(
    ('arguments', 'option'),
    [
        ({'agentool': 5, 'operation': 'b'}, 'agentool'),
        ({'agentool': 'a', 'operation': None}, 'operation'),
        ({'agentool': 'a', 'operation': 'b', 'attributes': 'bad'}, 'attributes'),
        ({'agentool': 'a', 'operation': 'b', 'attributes': [1, 2]}, 'attributes'),
    ],
)
@pytest.mark.parametrize('traced', [True, False])
def test_wrong_arguments_are_refused_whether_or_not_tracing_is_on(
    arguments: dict[str, Any], option: str, traced: bool, tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    # Untraced, the no-op fast path used to accept them, and traced they failed with ValueError or TypeError.
    with pytest.raises(ConfigurationError, match=f'^{option} must be') as caught:
        operation_span(**arguments, tracer=tracer if traced else None)
    assert caught.value.details == {'option': option, 'value': repr(arguments[option])}
    assert exporter.get_finished_spans() == ()
