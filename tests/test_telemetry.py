"""OpenTelemetry: pydantic-ai traces runs, `operation_span` other calls, dispatch a span per decision."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from mcp import Client
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, ProxyTracer, StatusCode, Tracer, get_current_span
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from agentool import (
    AgenToolInjector,
    BaseOperationInput,
    ConfigurationError,
    InputValidationError,
    InvalidInputError,
    JsonRule,
    ToolFailedError,
)
from agentool.dispatch import DISPATCH_PROVIDER, CommandRule, DispatchCapability, dispatch_record
from agentool.mcp import create_mcp_server
from agentool.telemetry import (
    AGENTOOL_ATTRIBUTE,
    CALLS_METRIC,
    DISPATCH_SPAN_NAME,
    DURATION_METRIC,
    ERROR_TYPE_ATTRIBUTE,
    ERRORS_METRIC,
    OPERATION_ATTRIBUTE,
    OPERATION_NAME_ATTRIBUTE,
    OUTCOME_ATTRIBUTE,
    RULE_ATTRIBUTE,
    SURFACE_ATTRIBUTE,
    TOOL_NAME_ATTRIBUTE,
    dispatch_span,
    in_trace,
    operation_span,
    record_dispatch,
)
from agentool.toolset import AgenToolToolset
from examples.calculator import create_calculator
from examples.support_assistant import Ticket, TicketDesk, create_tickets
from tests.agentools import agentool, make_calc, python_env, run_python
from tests.notes_agentool import create_notes


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def _attributes(agentool: str, operation: str, surface: str = 'direct', **extra: Any) -> dict[str, Any]:
    """A finished operation span's attributes: the documented ones (the toolset's lack the tool name), then `extra`."""
    named = {} if surface == 'toolset' else {TOOL_NAME_ATTRIBUTE: f'{agentool}.{operation}'}
    return {
        AGENTOOL_ATTRIBUTE: agentool,
        OPERATION_ATTRIBUTE: operation,
        SURFACE_ATTRIBUTE: surface,
        OPERATION_NAME_ATTRIBUTE: 'execute_tool',
        **named,
        **extra,
    }


def _decision(
    outcome: str, rule: str | None = None, agentool: str | None = None, operation: str | None = None
) -> dict[str, str]:
    """A dispatch span's attributes: the outcome, then what of the decision is known."""
    known = {RULE_ATTRIBUTE: rule, AGENTOOL_ATTRIBUTE: agentool, OPERATION_ATTRIBUTE: operation}
    return {OUTCOME_ATTRIBUTE: outcome, **{key: value for key, value in known.items() if value is not None}}


def _scripted(*replies: list[ToolCallPart] | str) -> FunctionModel:
    queue = iter(replies)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = next(queue)
        return ModelResponse(parts=[TextPart(reply)] if isinstance(reply, str) else list(reply))

    return FunctionModel(model)


def _instrumented(provider: TracerProvider) -> list[Instrumentation]:
    return [Instrumentation(InstrumentationSettings(tracer_provider=provider))]


def _instrumented_calc(provider: TracerProvider) -> Agent[Any, Any]:
    """`calc`, its `instrument` set to trace to `provider`."""
    calc = make_calc()
    calc.instrument = InstrumentationSettings(tracer_provider=provider)
    return calc


@pytest.fixture
def calc_injector(provider: TracerProvider) -> AgenToolInjector:
    """An injector tracing to this test's provider, with `calc` registered."""
    injector = AgenToolInjector(tracer_provider=provider)
    injector.register('calc', make_calc())
    return injector


def test_nested_calls_nest_and_errors_are_recorded(exporter: InMemorySpanExporter, tracer: Tracer) -> None:
    with (
        pytest.raises(ZeroDivisionError),
        operation_span('session', 'login', tracer=tracer),
        operation_span('storage', 'read', tracer=tracer),
    ):
        raise ZeroDivisionError('boom')
    spans = by_name(exporter)
    inner, outer = spans['execute_tool storage.read'], spans['execute_tool session.login']
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
    run_python(script)


def _with_a_global_provider(imports: str, script: str) -> list[str]:
    """What `script` printed in a fresh interpreter (the global provider is set once per process)."""
    return run_python(
        'from opentelemetry import trace\n'
        'from opentelemetry.sdk.trace import TracerProvider\n'
        'from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n'
        'from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n'
        f'{imports}'
        'exporter = InMemorySpanExporter()\n'
        'provider = TracerProvider()\n'
        'provider.add_span_processor(SimpleSpanProcessor(exporter))\n'
        'trace.set_tracer_provider(provider)\n'
        f'{script}'
    ).split()


def test_the_global_provider_gets_the_agentool_tracer() -> None:
    script = (
        "with operation_span('storage', 'write'):\n"
        '    pass\n'
        '(span,) = exporter.get_finished_spans()\n'
        "print(span.name, span.instrumentation_scope.name, span.attributes['agentool.surface'])\n"
    )
    out = _with_a_global_provider('from agentool.telemetry import operation_span\n', script)
    assert out == ['execute_tool', 'storage.write', 'agentool', 'direct']


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
    agent = Agent('agentool:calculator', capabilities=_instrumented(provider))
    await agent.run('{"operation": "multiply", "a": 2, "b": 3}')
    assert 'chat calculator' in by_name(exporter)


async def test_toolset_calls_get_an_operation_span_inside_the_tool_span(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    create_notes()
    model = _scripted([ToolCallPart('notes_get', {'key': 'k'})], 'done')
    agent = Agent(model, toolsets=[AgenToolToolset()], deps_type=dict, capabilities=_instrumented(provider))
    await agent.run('go', deps={'k': 'v'})
    spans = by_name(exporter)
    ours, tool = spans['execute_tool notes.get'], spans['execute_tool notes_get']
    assert ours.parent is not None
    assert tool.context is not None
    assert ours.parent.span_id == tool.context.span_id
    # pydantic-ai's span around it names the tool: an evaluator counts the call once.
    assert dict(ours.attributes or {}) == _attributes('notes', 'get', 'toolset')


async def test_mcp_calls_get_an_operation_span(exporter: InMemorySpanExporter, tracer: Tracer) -> None:
    create_calculator()
    async with Client(create_mcp_server(tracer=tracer)) as client:
        result = await client.call_tool('calculator_divide', {'a': 1, 'b': 0})
    assert result.is_error
    span = by_name(exporter)['execute_tool calculator.divide']
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
    assert (ok.name, failed.name) == ('execute_tool calculator.add', 'execute_tool calculator.divide')
    assert dict(ok.attributes or {}) == _attributes('calculator', 'add')
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
    imports = 'import asyncio\nfrom agentool import get_injector\nimport examples.calculator  # registers it\n'
    script = (
        'async def main():\n'
        "    await get_injector().call('calculator', {'operation': 'add', 'a': 1, 'b': 2})\n"
        "    with trace.get_tracer('app').start_as_current_span('request'):\n"
        "        await get_injector().call('calculator', {'operation': 'multiply', 'a': 2, 'b': 3})\n"
        'asyncio.run(main())\n'
        'ours, request = exporter.get_finished_spans()\n'
        'assert ours.parent.span_id == request.context.span_id\n'
        'print(ours.name, request.name)\n'
    )
    assert _with_a_global_provider(imports, script) == ['execute_tool', 'calculator.multiply', 'request']


@pytest.mark.parametrize(
    ('surface', 'extra'),
    [
        ('direct', {}),
        ('toolset', {}),
        ('mcp', {}),
        ('direct', {'extra': 1}),
        ('toolset', {'k': 'v', 'n': 2, 'flags': (True, False)}),
    ],
)
def test_operation_span_records_each_documented_surface_and_extra_attributes(
    surface: Literal['direct', 'toolset', 'mcp'], extra: dict[str, Any], tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    with operation_span('greeter', 'hello', surface=surface, tracer=tracer, attributes=extra) as recording:
        assert recording.is_recording()
    (span,) = exporter.get_finished_spans()
    assert span.name == 'execute_tool greeter.hello'
    assert dict(span.attributes or {}) == _attributes('greeter', 'hello', surface, **extra)
    assert span.instrumentation_scope is not None
    assert span.status.status_code is StatusCode.UNSET


def test_operation_span_is_current_inside_its_block(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    assert not in_trace()
    with operation_span('greeter', 'hello', tracer=tracer) as span:
        assert get_current_span() is span
        assert in_trace()
    assert not in_trace()


def test_operation_span_records_the_escaping_exception_and_reraises_the_same_object(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    error = KeyError('missing')
    with pytest.raises(KeyError) as caught, operation_span('storage', 'read', tracer=tracer):
        raise error
    assert caught.value is error
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    (event,) = span.events
    assert event.name == 'exception'
    assert (event.attributes or {})['exception.type'] == 'KeyError'


@pytest.mark.parametrize('tracer', [NoOpTracer(), ProxyTracer('agentool')])
def test_a_no_op_or_proxy_tracer_counts_as_none(tracer: Tracer) -> None:
    # No global provider in this process (conftest never sets one): the shared no-op.
    with operation_span('a', 'b', tracer=tracer) as span:
        assert not span.is_recording()
    assert operation_span('a', 'b', tracer=tracer) is operation_span('c', 'd')


DOCUMENTED = (AGENTOOL_ATTRIBUTE, OPERATION_ATTRIBUTE, SURFACE_ATTRIBUTE, TOOL_NAME_ATTRIBUTE, OPERATION_NAME_ATTRIBUTE)
SURFACES = "surface must be one of 'direct', 'agent', 'toolset', 'mcp'; got 'bogus'"
TRACER = 'tracer must be an OpenTelemetry Tracer'


@pytest.mark.parametrize(
    ('arguments', 'option', 'message'),
    [
        # Untraced, the no-op fast path used to accept these four; traced, they raised ValueError or TypeError.
        ({'agentool': 5}, 'agentool', '^agentool must be'),
        ({'operation': None}, 'operation', '^operation must be'),
        ({'attributes': 'bad'}, 'attributes', '^attributes must be'),
        ({'attributes': [1, 2]}, 'attributes', '^attributes must be'),
        ({'surface': None}, 'surface', 'surface'),
        ({'surface': 'Direct'}, 'surface', 'surface'),
        ({'surface': 'bogus'}, 'surface', SURFACES),
        ({'tracer': 5}, 'tracer', TRACER),
        ({'tracer': 'x'}, 'tracer', TRACER),
        ({'tracer': object()}, 'tracer', TRACER),
        ({'tracer': TracerProvider()}, 'tracer', TRACER),  # a provider where a tracer goes
        ({'attributes': ('k', 'v')}, 'attributes', 'attributes'),
        *(  # the guide's table: `agentool.name` is the agentool, and so on; an extra one used to replace it
            ({'attributes': {key: 'other', 'extra': 1}}, 'attributes', f'attributes may not set {key!r}')
            for key in DOCUMENTED
        ),
        ({'meter_provider': 'provider'}, 'meter_provider', 'meter_provider must be'),
        ({'meter_provider': object()}, 'meter_provider', 'meter_provider must be'),
        ({'meter_provider': NoOpTracer()}, 'meter_provider', 'meter_provider must be'),
    ],
)
@pytest.mark.parametrize('traced', [True, False])
def test_misuse_of_operation_span_is_a_configuration_error_naming_the_option(
    arguments: dict[str, Any], option: str, message: str, traced: bool, tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    given: dict[str, Any] = {'agentool': 'a', 'operation': 'b', 'tracer': tracer if traced else None, **arguments}
    with pytest.raises(ConfigurationError, match=message) as caught:
        operation_span(**given)
    supported = {'supported': ['direct', 'agent', 'toolset', 'mcp']} if option == 'surface' else {}
    assert caught.value.details == {'option': option, 'value': repr(arguments[option]), **supported}
    assert exporter.get_finished_spans() == ()


def test_in_trace_is_false_inside_a_span_that_does_not_record() -> None:
    with operation_span('a', 'b') as span:  # the shared no-op
        assert not span.is_recording()
        assert not in_trace()


async def test_nested_agentool_calls_become_children_of_the_callers_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    injector = AgenToolInjector(tracer_provider=provider)

    class OuterInput(BaseOperationInput):
        operation: Literal['twice']
        a: float

    async def twice(a: float) -> float:
        return await injector.call('calc', {'operation': 'add', 'a': a, 'b': a})

    injector.register('calc', make_calc())
    outer = agentool('outer', OuterInput, {'twice': twice})
    injector.register('outer', outer)
    assert await injector.call('outer', {'operation': 'twice', 'a': 2}) == 4.0
    spans = by_name(exporter)
    inner, parent = spans['execute_tool calc.add'], spans['execute_tool outer.twice']
    assert inner.parent is not None
    assert parent.context is not None
    assert inner.parent.span_id == parent.context.span_id
    assert inner.context is not None
    assert inner.context.trace_id == parent.context.trace_id


async def test_a_tracer_provider_given_later_traces_every_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    injector = AgenToolInjector()
    injector.register('calc', make_calc())
    await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 1})
    assert exporter.get_finished_spans() == ()
    injector.tracer_provider = provider
    await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 1})
    assert [span.name for span in exporter.get_finished_spans()] == ['execute_tool calc.add']


async def test_a_direct_call_inside_a_span_of_the_callers_own_provider_is_not_lost(
    tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    # Inside a trace in progress, a call with no provider of its own uses the global provider, which
    # is not configured here: the call runs untraced, and the caller's span is intact.
    injector = AgenToolInjector()
    injector.register('calc', make_calc())
    with tracer.start_as_current_span('request'):
        assert in_trace()
        assert await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}) == 3.0
    assert [span.name for span in exporter.get_finished_spans()] == ['request']


async def test_a_tool_exception_on_the_direct_path_is_recorded_and_not_swallowed(
    calc_injector: AgenToolInjector, exporter: InMemorySpanExporter
) -> None:
    with pytest.raises(ZeroDivisionError):
        await calc_injector.call('calc', {'operation': 'div', 'a': 1, 'b': 0})
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert [(event.attributes or {}).get('exception.type') for event in span.events] == ['ZeroDivisionError']


async def test_input_that_fails_validation_raises_before_any_span_opens(
    calc_injector: AgenToolInjector, exporter: InMemorySpanExporter
) -> None:
    # The guide: the span covers the operation once its input is valid (its name needs the operation).
    with pytest.raises(InvalidInputError) as caught:
        await calc_injector.call('calc', {'operation': 'add', 'a': 1})
    assert caught.value.details['agentool'] == 'calc'
    assert exporter.get_finished_spans() == ()


async def test_every_run_of_an_instrumented_agentool_is_traced_not_only_the_first(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = _instrumented_calc(provider)
    for _ in range(3):
        exporter.clear()
        assert (await calc.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0
        names = {span.name for span in exporter.get_finished_spans()}
        assert names == {'chat calc', 'execute_tool __agentool_manager__', 'execute_tool calc.add', 'invoke_agent calc'}


async def test_the_chat_span_reports_the_agentool_system_and_no_tokens(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = _instrumented_calc(provider)
    result = await calc.run('{"operation": "add", "a": 1, "b": 2}')
    assert (result.usage.input_tokens, result.usage.output_tokens) == (0, 0)
    for span in exporter.get_finished_spans():
        attributes = dict(span.attributes or {})
        if span.name == 'chat calc':
            assert attributes['gen_ai.system'] == 'agentool'
        assert not any(attributes.get(key) for key in ('gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens'))


async def test_create_agentool_with_the_instrumentation_capability_is_traced(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = make_calc(capabilities=_instrumented(provider))
    assert (await calc.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0
    assert {'invoke_agent calc', 'chat calc'} <= set(by_name(exporter))


async def test_a_failing_tool_in_a_traced_run_is_recorded_and_propagates(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = _instrumented_calc(provider)
    with pytest.raises(ZeroDivisionError):
        await calc.run('{"operation": "div", "a": 1, "b": 0}')
    spans = by_name(exporter)
    assert spans['invoke_agent calc'].status.status_code is StatusCode.ERROR


_INSTRUMENT_ALL = (
    'from opentelemetry.sdk.trace import TracerProvider\n'
    'from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n'
    'from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n'
    'from pydantic_ai import Agent\n'
    'from pydantic_ai.models.instrumented import InstrumentationSettings\n'
    'from agentool import get_injector\n'
    'exporter = InMemorySpanExporter()\n'
    'provider = TracerProvider()\n'
    'provider.add_span_processor(SimpleSpanProcessor(exporter))\n'
    'Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))\n'
    'import examples.calculator  # registers the calculator\n'
    "calculator = get_injector().get('calculator')\n"
)


def test_instrument_all_traces_agentools_too() -> None:
    script = _INSTRUMENT_ALL + (
        'for agent in (calculator, Agent("agentool:calculator")):\n'
        '    agent.run_sync(\'{"operation": "add", "a": 1, "b": 2}\')\n'
        'print(sorted(span.name for span in exporter.get_finished_spans() if span.name.startswith("invoke")))\n'
    )
    assert run_python(script).split('\n')[0] == "['invoke_agent agent', 'invoke_agent calculator']"


_THREE_RUNS = (
    'for _ in range(3):\n'
    '    calculator.run_sync(\'{"operation": "add", "a": 1, "b": 2}\')\n'
    'print(sum(span.name == "invoke_agent calculator" for span in exporter.get_finished_spans()))\n'
)


@pytest.mark.parametrize('lean', [True, False])
def test_instrument_all_traces_every_run_of_an_agentool_not_only_the_first(lean: bool) -> None:
    assert run_python(_INSTRUMENT_ALL + f'calculator.lean = {lean}\n' + _THREE_RUNS).strip() == '3'


def test_instrument_all_called_before_import_agentool_traces_every_run() -> None:
    # agentool reads instrumentation from each run's context: nothing needs to see the call itself.
    script = (
        _INSTRUMENT_ALL.replace('from agentool import get_injector\n', '').replace(
            'calculator = get_injector()', 'from agentool import get_injector\ncalculator = get_injector()'
        )
        + _THREE_RUNS
    )
    assert script.index('instrument_all') < script.index('import examples') < script.index('agentool')
    assert run_python(script).strip() == '3'


def test_a_provider_named_by_the_environment_is_seen_once_loaded() -> None:
    script = (
        'from opentelemetry import trace\n'
        'from agentool.telemetry import operation_span\n'
        "assert not operation_span('a', 'b').__enter__().is_recording()\n"
        'trace.get_tracer_provider()\n'
        "with operation_span('a', 'b') as span:\n"
        '    assert span.is_recording()\n'
        "print('ok')\n"
    )
    env = {**python_env(), 'OTEL_PYTHON_TRACER_PROVIDER': 'sdk_tracer_provider'}
    assert run_python(script, env=env).strip() == 'ok'


async def test_a_failing_toolset_call_is_recorded_on_its_operation_span_and_propagates(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    make_calc()
    model = _scripted([ToolCallPart('calc_div', {'a': 1, 'b': 0})], 'done')
    agent = Agent(model, toolsets=[AgenToolToolset()], capabilities=_instrumented(provider))
    with pytest.raises(ZeroDivisionError):
        await agent.run('go')
    span = by_name(exporter)['execute_tool calc.div']
    assert (span.attributes or {})[SURFACE_ATTRIBUTE] == 'toolset'
    assert span.status.status_code is StatusCode.ERROR


async def test_an_uninstrumented_toolset_run_opens_no_span(exporter: InMemorySpanExporter) -> None:
    make_calc()
    agent = Agent(_scripted([ToolCallPart('calc_add', {'a': 1, 'b': 2})], 'done'), toolsets=[AgenToolToolset()])
    assert (await agent.run('go')).output == 'done'
    assert exporter.get_finished_spans() == ()


def test_dispatch_span_and_record_dispatch_set_the_decision(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with dispatch_span(tracer=tracer) as span:
        record_dispatch(span, outcome='dispatched', rule='json', agentool='calc', operation='add')
    (finished,) = exporter.get_finished_spans()
    assert finished.name == DISPATCH_SPAN_NAME
    assert dict(finished.attributes or {}) == _decision('dispatched', 'json', 'calc', 'add')


@pytest.mark.parametrize('tracer', [None, NoOpTracer()])
def test_dispatch_span_without_a_provider_is_the_shared_no_op(tracer: Tracer | None) -> None:
    assert dispatch_span() is operation_span('a', 'b')
    with dispatch_span(tracer=tracer) as span:
        record_dispatch(span, outcome='model', rule=None, agentool=None, operation=None)
    assert not span.is_recording()


@pytest.mark.parametrize('bad', ['x', 5, object()])
def test_dispatch_span_refuses_a_tracer_that_is_not_one(bad: object) -> None:
    with pytest.raises(ConfigurationError, match='tracer must be an OpenTelemetry Tracer') as caught:
        dispatch_span(tracer=bad)  # pyright: ignore[reportArgumentType]
    assert caught.value.details == {'option': 'tracer', 'value': repr(bad)}


@pytest.mark.parametrize(
    ('arguments', 'option'),
    [
        ({'span': 'not a span'}, 'span'),
        ({'outcome': 'bogus'}, 'outcome'),
        ({'rule': 5}, 'rule'),
        ({'agentool': b'calc'}, 'agentool'),
        ({'operation': ['add']}, 'operation'),
    ],
)
def test_record_dispatch_refuses_wrong_arguments(
    arguments: dict[str, Any], option: str, tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    with tracer.start_as_current_span('dispatch') as span:
        given: dict[str, Any] = {'span': span, 'outcome': 'dispatched', 'rule': 'r', 'agentool': 'a', 'operation': 'o'}
        with pytest.raises(ConfigurationError) as caught:
            record_dispatch(**{**given, **arguments})
    assert caught.value.details['option'] == option
    assert caught.value.details['value'] == repr(arguments[option])
    (finished,) = exporter.get_finished_spans()
    assert dict(finished.attributes or {}) == {}


def _points(reader: InMemoryMetricReader) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """Each metric's data points as (attributes, value or histogram count)."""
    found: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    value = point.count if isinstance(point, HistogramDataPoint) else getattr(point, 'value', None)
                    found.setdefault(metric.name, []).append((dict(point.attributes or {}), value))
    return found


def test_operation_metrics_count_calls_time_them_and_count_errors_by_type() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    for _ in range(2):
        with operation_span('calc', 'add', meter_provider=meters):
            pass
    with pytest.raises(ZeroDivisionError), operation_span('calc', 'div', surface='mcp', meter_provider=meters):
        raise ZeroDivisionError
    points = _points(reader)
    add = {AGENTOOL_ATTRIBUTE: 'calc', OPERATION_ATTRIBUTE: 'add', SURFACE_ATTRIBUTE: 'direct'}
    div = {AGENTOOL_ATTRIBUTE: 'calc', OPERATION_ATTRIBUTE: 'div', SURFACE_ATTRIBUTE: 'mcp'}
    assert sorted(points[CALLS_METRIC], key=repr) == sorted([(add, 2), (div, 1)], key=repr)
    assert sorted(points[DURATION_METRIC], key=repr) == sorted([(add, 2), (div, 1)], key=repr)
    assert points[ERRORS_METRIC] == [({**div, ERROR_TYPE_ATTRIBUTE: 'ZeroDivisionError'}, 1)]


def test_without_a_meter_provider_or_a_tracer_nothing_is_measured() -> None:
    # No global meter provider in this process: the shared no-op, as with tracing off.
    assert operation_span('a', 'b') is operation_span('c', 'd', meter_provider=NoOpMeterProvider())


def test_metrics_without_tracing_measure_and_open_no_span(exporter: InMemorySpanExporter) -> None:
    reader = InMemoryMetricReader()
    with operation_span('a', 'b', meter_provider=MeterProvider(metric_readers=[reader])) as span:
        assert not span.is_recording()
    assert [value for _, value in _points(reader)[CALLS_METRIC]] == [1]
    assert exporter.get_finished_spans() == ()


def test_the_global_meter_provider_gets_metrics_from_every_surface() -> None:
    pytest.importorskip('mcp')
    # A process of its own: OpenTelemetry lets a global meter provider be set once.
    script = (
        'import asyncio\n'
        'from mcp import Client\n'
        'from opentelemetry import metrics\n'
        'from opentelemetry.sdk.metrics import MeterProvider\n'
        'from opentelemetry.sdk.metrics.export import InMemoryMetricReader\n'
        'from opentelemetry.sdk.trace import TracerProvider\n'
        'from pydantic_ai import Agent\n'
        'from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart\n'
        'from pydantic_ai.models.function import FunctionModel\n'
        'from agentool import get_injector\n'
        'from agentool.mcp import create_mcp_server\n'
        'from agentool.toolset import AgenToolToolset\n'
        'import examples.calculator  # registers the calculator\n'
        'reader = InMemoryMetricReader()\n'
        'metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))\n'
        'replies = iter([[ToolCallPart("calculator_add", {"a": 1, "b": 2})], "done"])\n'
        'def model(messages, info):\n'
        '    reply = next(replies)\n'
        '    return ModelResponse(parts=[TextPart(reply)] if isinstance(reply, str) else reply)\n'
        'async def main():\n'
        '    injector = get_injector()\n'
        '    injector.tracer_provider = TracerProvider()  # the direct path measures where it traces\n'
        '    await injector.call("calculator", {"operation": "add", "a": 1, "b": 2})\n'
        '    await Agent(FunctionModel(model), toolsets=[AgenToolToolset()]).run("go")\n'
        '    async with Client(create_mcp_server()) as client:\n'
        '        await client.call_tool("calculator_divide", {"a": 1, "b": 0})\n'
        'asyncio.run(main())\n'
        'for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics:\n'
        '    for point in metric.data.data_points:\n'
        '        a = point.attributes\n'
        '        extra = a.get("error.type", "-")\n'
        '        print(metric.name, a["agentool.operation"], a["agentool.surface"], extra)\n'
    )
    assert sorted(run_python(script).splitlines()) == [
        'agentool.operation.calls add direct -',
        'agentool.operation.calls add toolset -',
        'agentool.operation.calls divide mcp -',
        'agentool.operation.duration add direct -',
        'agentool.operation.duration add toolset -',
        'agentool.operation.duration divide mcp -',
        'agentool.operation.errors divide mcp ZeroDivisionError',
    ]


# --- dispatch decisions ------------------------------------------------------------------------------


def _decisions(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == DISPATCH_SPAN_NAME]


async def test_each_decision_gets_a_span_inside_the_agent_run(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    create_tickets()
    rule = CommandRule(name='status', pattern=r'/status\s+(?P<ticket_id>\S+)', agentool='tickets', operation='status')
    capabilities = [*_instrumented(provider), DispatchCapability([rule])]
    agent = Agent(TestModel(), deps_type=TicketDesk, capabilities=capabilities)
    desk = TicketDesk(tickets={1: Ticket(id=1, subject='s', status='open')})
    await agent.run('/status 1', deps=desk)
    await agent.run('hello', deps=desk)
    with pytest.raises(InputValidationError):
        await agent.run('/status one', deps=desk)
    with pytest.raises(ToolFailedError):
        await agent.run('/status 2', deps=desk)
    spans = _decisions(exporter)
    assert [dict(span.attributes or {}) for span in spans] == [
        _decision('dispatched', 'status', 'tickets', 'status'),
        _decision('model'),
        _decision('error', 'status', 'tickets'),  # invalid input
        _decision('error', 'status', 'tickets', 'status'),  # the tool failed: the operation it ran is known
    ]
    runs = [span for span in exporter.get_finished_spans() if span.name.startswith('invoke_agent')]
    first = spans[0]
    assert first.parent is not None
    assert first.parent.span_id in {run.context.span_id for run in runs if run.context is not None}
    assert not spans[2].status.is_ok  # the error is recorded on the span


def _dispatch_decisions(provider: TracerProvider, exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    make_calc()

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('free text')])

    capabilities = [DispatchCapability([JsonRule(name='json', agentool='calc')]), *_instrumented(provider)]
    agent = Agent(FunctionModel(llm), output_type=str, capabilities=capabilities)
    agent.run_sync('{"operation": "add", "a": 1, "b": 2}')
    agent.run_sync('hello')
    with pytest.raises(ZeroDivisionError):
        agent.run_sync('{"operation": "div", "a": 1, "b": 0}')
    return [span for span in exporter.get_finished_spans() if span.name == DISPATCH_SPAN_NAME]


def test_an_instrumented_agent_with_dispatch_records_each_decision(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    dispatched, model, failed = _dispatch_decisions(provider, exporter)
    assert dict(dispatched.attributes or {}) == _decision('dispatched', 'json', 'calc', 'add')
    assert dict(model.attributes or {}) == _decision('model')
    assert _decision('error', 'json', 'calc').items() <= dict(failed.attributes or {}).items()
    assert failed.status.status_code is StatusCode.ERROR
    assert [(event.attributes or {}).get('exception.type') for event in failed.events] == ['ZeroDivisionError']


def test_a_dispatch_whose_tool_raises_records_the_operation_it_ran(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    failed = _dispatch_decisions(provider, exporter)[-1]
    assert (failed.attributes or {}).get(OPERATION_ATTRIBUTE) == 'div'


@pytest.mark.parametrize(
    'metadata',
    [
        {'agentool_dispatch': {}},
        {'agentool_dispatch': {'rule': 'x'}},
        {'agentool_dispatch': {'rule': 1, 'agentool': 'a', 'operation': 'o'}},
    ],
)
def test_dispatch_record_of_a_response_with_an_incomplete_record_is_none(metadata: dict[str, Any]) -> None:
    """A history loaded from storage may hold anything: reading it never raises a KeyError."""
    assert dispatch_record(ModelResponse(parts=[], provider_name=DISPATCH_PROVIDER, metadata=metadata)) is None
