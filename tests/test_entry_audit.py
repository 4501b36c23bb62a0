"""Held-out tests written from the entry pages and the telemetry guide, through the public API only.

Each test names the page (or docstring) whose claim it checks.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import subprocess
import sys
import threading
import tomllib
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracer, ProxyTracer, StatusCode, Tracer, get_current_span
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from agentool import (
    AgenToolCapability,
    AgenToolInjector,
    BaseOperationInput,
    ConfigurationError,
    DepsUnavailableError,
    DispatchCapability,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    JsonRule,
    OutputError,
    PydanticAIVersionError,
    RoutingConfig,
    UnknownOperationError,
    create_agentool,
    get_injector,
    get_registry,
    model_strings,
)
from agentool._compat import PYDANTIC_AI_VERSION, SUPPORTED, check_pydantic_ai
from agentool.telemetry import (
    AGENTOOL_ATTRIBUTE,
    DISPATCH_SPAN_NAME,
    OPERATION_ATTRIBUTE,
    OUTCOME_ATTRIBUTE,
    RULE_ATTRIBUTE,
    SURFACE_ATTRIBUTE,
    dispatch_span,
    in_trace,
    operation_span,
    record_dispatch,
)
from agentool.toolset import AgenToolToolset
from tests.test_architecture import import_graph

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    env.pop('OTEL_PYTHON_TRACER_PROVIDER', None)
    return env


def _python(script: str, *, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, '-c', script], env=env or _env(), cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def tracer(provider: TracerProvider) -> Tracer:
    return provider.get_tracer('agentool')


def spans_named(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


class CalcInput(BaseOperationInput):
    operation: Literal['add', 'div']
    a: float
    b: float


async def add(a: float, b: float) -> float:
    return a + b


async def div(a: float, b: float) -> float:
    return a / b


def make_calc(**kwargs: Any) -> Agent[Any, Any]:
    config = RoutingConfig(operation_map={'add': 'add', 'div': 'div'})
    return create_agentool('calc', CalcInput, config, [add, div], **kwargs)


# --- telemetry guide: operation_span ---------------------------------------------------------------


@pytest.mark.parametrize('surface', ['direct', 'toolset', 'mcp'])
def test_operation_span_records_each_documented_surface(
    surface: Literal['direct', 'toolset', 'mcp'], tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    with operation_span('greeter', 'hello', surface=surface, tracer=tracer):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.name == 'agentool greeter.hello'
    assert dict(span.attributes or {}) == {
        AGENTOOL_ATTRIBUTE: 'greeter',
        OPERATION_ATTRIBUTE: 'hello',
        SURFACE_ATTRIBUTE: surface,
    }
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


def test_extra_attributes_are_added(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with operation_span('a', 'b', tracer=tracer, attributes={'k': 'v', 'n': 2, 'flags': (True, False)}):
        pass
    (span,) = exporter.get_finished_spans()
    assert {'k': 'v', 'n': 2, 'flags': (True, False)}.items() <= dict(span.attributes or {}).items()


@pytest.mark.parametrize('key', [AGENTOOL_ATTRIBUTE, OPERATION_ATTRIBUTE, SURFACE_ATTRIBUTE])
@pytest.mark.parametrize('traced', [True, False])
def test_extra_attributes_cannot_overwrite_the_documented_ones(
    key: str, traced: bool, tracer: Tracer, exporter: InMemorySpanExporter
) -> None:
    # The guide's table: `agentool.name` is the agentool, and so on; an extra attribute used to replace it.
    attributes = {key: 'other', 'extra': 1}
    with pytest.raises(ConfigurationError, match=f'attributes may not set {key!r}') as caught:
        operation_span('greeter', 'hello', tracer=tracer if traced else None, attributes=attributes)
    assert caught.value.details == {'option': 'attributes', 'value': repr(attributes)}
    assert exporter.get_finished_spans() == ()


@pytest.mark.parametrize(
    ('arguments', 'option'),
    [
        ({'surface': None}, 'surface'),
        ({'surface': 'Direct'}, 'surface'),
        ({'tracer': 5}, 'tracer'),
        ({'tracer': TracerProvider()}, 'tracer'),  # a provider where a tracer goes
        ({'attributes': ('k', 'v')}, 'attributes'),
    ],
)
def test_misuse_of_operation_span_is_a_configuration_error_naming_the_option(
    arguments: dict[str, Any], option: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        operation_span('a', 'b', **arguments)
    assert caught.value.details['option'] == option
    assert caught.value.details['value'] == repr(arguments[option])
    assert option in str(caught.value)


def test_in_trace_is_false_inside_a_span_that_does_not_record() -> None:
    with operation_span('a', 'b') as span:  # the shared no-op
        assert not span.is_recording()
        assert not in_trace()


# --- telemetry guide: the direct path --------------------------------------------------------------


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
    outer = create_agentool('outer', OuterInput, RoutingConfig(operation_map={'twice': 'twice'}), [twice])
    injector.register('outer', outer)
    assert await injector.call('outer', {'operation': 'twice', 'a': 2}) == 4.0
    spans = spans_named(exporter)
    inner, parent = spans['agentool calc.add'], spans['agentool outer.twice']
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
    assert [span.name for span in exporter.get_finished_spans()] == ['agentool calc.add']


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
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    injector = AgenToolInjector(tracer_provider=provider)
    injector.register('calc', make_calc())
    with pytest.raises(ZeroDivisionError):
        await injector.call('calc', {'operation': 'div', 'a': 1, 'b': 0})
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert [(event.attributes or {}).get('exception.type') for event in span.events] == ['ZeroDivisionError']


async def test_input_that_fails_validation_raises_before_any_span_opens(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # The guide: the span covers the operation once its input is valid (its name needs the operation).
    injector = AgenToolInjector(tracer_provider=provider)
    injector.register('calc', make_calc())
    with pytest.raises(InvalidInputError) as caught:
        await injector.call('calc', {'operation': 'add', 'a': 1})
    assert caught.value.details['agentool'] == 'calc'
    assert exporter.get_finished_spans() == ()


# --- telemetry guide: agent runs -------------------------------------------------------------------


async def test_every_run_of_an_instrumented_agentool_is_traced_not_only_the_first(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = make_calc()
    calc.instrument = InstrumentationSettings(tracer_provider=provider)
    for _ in range(3):
        exporter.clear()
        assert (await calc.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0
        names = {span.name for span in exporter.get_finished_spans()}
        assert names == {'chat calc', 'execute_tool __agentool_manager__', 'invoke_agent calc'}


async def test_the_chat_span_reports_the_agentool_system_and_no_tokens(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = make_calc()
    calc.instrument = InstrumentationSettings(tracer_provider=provider)
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
    calc = make_calc(capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=provider))])
    assert (await calc.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0
    assert {'invoke_agent calc', 'chat calc'} <= set(spans_named(exporter))


async def test_a_failing_tool_in_a_traced_run_is_recorded_and_propagates(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    calc = make_calc()
    calc.instrument = InstrumentationSettings(tracer_provider=provider)
    with pytest.raises(ZeroDivisionError):
        await calc.run('{"operation": "div", "a": 1, "b": 0}')
    spans = spans_named(exporter)
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
"""A fresh interpreter: `Agent.instrument_all` with a provider of its own (no global one), then the calculator."""


def test_instrument_all_traces_agentools_too() -> None:
    script = _INSTRUMENT_ALL + (
        'for agent in (calculator, Agent("agentool:calculator")):\n'
        '    agent.run_sync(\'{"operation": "add", "a": 1, "b": 2}\')\n'
        'print(sorted(span.name for span in exporter.get_finished_spans() if span.name.startswith("invoke")))\n'
    )
    assert _python(script).split('\n')[0] == "['invoke_agent agent', 'invoke_agent calculator']"


@pytest.mark.parametrize('lean', [True, False])
def test_instrument_all_traces_every_run_of_an_agentool_not_only_the_first(lean: bool) -> None:
    script = _INSTRUMENT_ALL + (
        f'calculator.lean = {lean}\n'
        'for _ in range(3):\n'
        '    calculator.run_sync(\'{"operation": "add", "a": 1, "b": 2}\')\n'
        'print(sum(span.name == "invoke_agent calculator" for span in exporter.get_finished_spans()))\n'
    )
    assert _python(script).strip() == '3'


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
    env = {**_env(), 'OTEL_PYTHON_TRACER_PROVIDER': 'sdk_tracer_provider'}
    assert _python(script, env=env).strip() == 'ok'


# --- telemetry: the toolset surface ----------------------------------------------------------------


def _scripted(*replies: list[ToolCallPart] | str) -> FunctionModel:
    queue = iter(replies)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = next(queue)
        return ModelResponse(parts=[TextPart(reply)] if isinstance(reply, str) else list(reply))

    return FunctionModel(model)


async def test_a_failing_toolset_call_is_recorded_on_its_operation_span_and_propagates(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    make_calc()
    agent = Agent(
        _scripted([ToolCallPart('calc_div', {'a': 1, 'b': 0})], 'done'),
        toolsets=[AgenToolToolset()],
        capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=provider))],
    )
    with pytest.raises(ZeroDivisionError):
        await agent.run('go')
    span = spans_named(exporter)['agentool calc.div']
    assert (span.attributes or {})[SURFACE_ATTRIBUTE] == 'toolset'
    assert span.status.status_code is StatusCode.ERROR


async def test_an_uninstrumented_toolset_run_opens_no_span(exporter: InMemorySpanExporter) -> None:
    make_calc()
    agent = Agent(_scripted([ToolCallPart('calc_add', {'a': 1, 'b': 2})], 'done'), toolsets=[AgenToolToolset()])
    assert (await agent.run('go')).output == 'done'
    assert exporter.get_finished_spans() == ()


# --- telemetry: dispatch spans (public API docstrings) ---------------------------------------------


def test_dispatch_span_and_record_dispatch_set_the_decision(tracer: Tracer, exporter: InMemorySpanExporter) -> None:
    with dispatch_span(tracer=tracer) as span:
        record_dispatch(span, outcome='dispatched', rule='json', agentool='calc', operation='add')
    (finished,) = exporter.get_finished_spans()
    assert finished.name == DISPATCH_SPAN_NAME
    assert dict(finished.attributes or {}) == {
        OUTCOME_ATTRIBUTE: 'dispatched',
        RULE_ATTRIBUTE: 'json',
        AGENTOOL_ATTRIBUTE: 'calc',
        OPERATION_ATTRIBUTE: 'add',
    }


def test_dispatch_span_without_a_provider_is_the_shared_no_op() -> None:
    assert dispatch_span() is operation_span('a', 'b')
    with dispatch_span(tracer=NoOpTracer()) as span:
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


# --- the compatibility layer -----------------------------------------------------------------------


@pytest.mark.parametrize('version', ['2.60.0a1', '2.60.0b1', '2.60.0rc1', '2.60.0.dev3', '2.60.0rc1.dev2+g0'])
def test_a_pre_release_of_the_floor_is_below_the_declared_range(version: str) -> None:
    # pyproject.toml declares `>=2.60.0`, which a pre-release or dev release of 2.60.0 does not satisfy.
    with pytest.raises(PydanticAIVersionError) as caught:
        check_pydantic_ai(version)
    assert caught.value.details == {'installed': version, 'supported': SUPPORTED}


@pytest.mark.parametrize('version', ['2.60.0', '2.60.0.post1', '2.60.1b1', '2.61.0.dev0', '2.99.99rc1'])
def test_releases_inside_the_declared_range_pass(version: str) -> None:
    check_pydantic_ai(version)


def test_import_agentool_on_an_unsupported_release_is_the_typed_error() -> None:
    script = (
        'import pydantic_ai\n'
        "pydantic_ai.__version__ = '2.59.3'\n"
        'try:\n'
        '    import agentool\n'
        'except ImportError as error:\n'
        '    print(type(error).__name__, error.details)\n'
    )
    out = _python(script)
    assert out.strip() == ("PydanticAIVersionError {'installed': '2.59.3', 'supported': 'pydantic-ai-slim>=2.60.0,<3'}")


# --- README ----------------------------------------------------------------------------------------


def _readme_quickstart() -> str:
    readme = (ROOT / 'README.md').read_text()
    found = re.search(r'## Quickstart\n.*?```python\n(.*?)```', readme, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_readme_quickstart_runs_as_copied_in_a_fresh_interpreter_and_writes_nothing(tmp_path: Path) -> None:
    _python(_readme_quickstart() + "print('ran')\n", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []


BAD_INPUTS = [
    ('{"operation": "add", "a": 5', InvalidJSONError, {'position': 27, 'line': 1, 'column': 28}),
    ('{"operation": "pow", "a": 1, "b": 2}', UnknownOperationError, {'operation': 'pow', 'known': ['add', 'div']}),
    ('{"operation": "add", "a": 1}', InputValidationError, {'operation': 'add'}),
    ('{"operation": "add", "a": "x", "b": 2}', InputValidationError, {'operation': 'add'}),
    ('{"operation": "add", "a": 1, "b": 2, "c": 3}', InputValidationError, {'operation': 'add'}),
]


@pytest.mark.parametrize(('prompt', 'kind', 'details'), BAD_INPUTS)
@pytest.mark.parametrize('form', ['create_agentool', 'model string', 'injector'])
async def test_bad_input_is_a_typed_invalid_input_error_straight_out_of_run(
    prompt: str, kind: type[InvalidInputError], details: dict[str, Any], form: str
) -> None:
    calls: list[float] = []

    async def spy(a: float, b: float) -> float:
        calls.append(a)
        return a

    config = RoutingConfig(operation_map={'add': 'spy', 'div': 'spy'})
    agent = create_agentool('calc', CalcInput, config, [spy])
    runs = {
        'create_agentool': agent.run,
        'model string': Agent('agentool:calc', output_type=float).run,
        'injector': partial(get_injector().call, 'calc'),
    }
    with pytest.raises(kind) as caught:
        await runs[form](prompt)
    assert isinstance(caught.value, InvalidInputError)
    assert {'agentool': 'calc', **details}.items() <= caught.value.details.items()
    assert calls == []  # bad input never reaches the tool (docs/index.md)


@pytest.mark.parametrize(
    ('prompt', 'field'),
    [
        ('{"operation": "add", "a": 1}', 'b'),
        ('{"operation": "add", "a": "x", "b": 2}', 'a'),
        ('{"operation": "add", "a": 1, "b": 2, "c": 3}', 'c'),
    ],
)
def test_a_field_error_names_the_agentool_the_operation_and_the_field(prompt: str, field: str) -> None:
    with pytest.raises(InputValidationError) as caught:
        make_calc().run_sync(prompt)
    assert (caught.value.details['agentool'], caught.value.details['operation']) == ('calc', 'add')
    assert [error['loc'] for error in caught.value.details['errors']] == [[field]]
    assert f"field '{field}'" in str(caught.value)


def test_routes_without_a_transform_pass_only_the_fields_matching_the_tools_parameters() -> None:
    class NoteInput(BaseOperationInput):
        operation: Literal['shout']
        text: str
        unused: int = 0

    async def shout(text: str) -> str:
        return text.upper()

    agent = create_agentool('note', NoteInput, RoutingConfig(operation_map={'shout': 'shout'}), [shout])
    assert agent.run_sync('{"operation": "shout", "text": "hi"}').output == 'HI'
    # A field the operation does not use is refused rather than dropped.
    with pytest.raises(InputValidationError, match=r"field 'unused'.*does not use it"):
        agent.run_sync('{"operation": "shout", "text": "hi", "unused": 3}')


def test_the_explicit_capability_form_patches_nothing_and_carries_deps() -> None:
    class DepsInput(BaseOperationInput):
        operation: Literal['get']

    async def get(ctx: RunContext[dict[str, str]]) -> str:
        return ctx.deps['k']

    create_agentool('depsy', DepsInput, RoutingConfig(operation_map={'get': 'get'}), [get], deps_type=dict)
    model_strings.uninstall()
    try:
        assert not model_strings.is_installed()
        agent = Agent('agentool:depsy', capabilities=[AgenToolCapability('depsy')], deps_type=dict, output_type=str)
        assert agent.run_sync('{"operation": "get"}', deps={'k': 'v'}).output == 'v'
    finally:
        model_strings.install()
    with pytest.raises(DepsUnavailableError, match='cannot receive deps'):
        Agent('agentool:depsy', deps_type=dict).run_sync('{"operation": "get"}', deps={'k': 'v'})


async def test_injector_overrides_are_task_local() -> None:
    make_calc()
    injector = get_injector()
    inside = anyio.Event()
    seen: list[float] = []

    async def overridden() -> None:
        with injector.override(calc=42.0):
            seen.append(await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}))
            inside.set()
            await anyio.sleep(0.05)

    async def plain() -> None:
        await inside.wait()
        seen.append(await injector.call('calc', {'operation': 'add', 'a': 1, 'b': 2}))

    async with anyio.create_task_group() as group:
        group.start_soon(overridden)
        group.start_soon(plain)
    assert seen == [42.0, 3.0]


def test_the_injector_raises_the_same_typed_error_as_run() -> None:
    agent = make_calc()
    with pytest.raises(UnknownOperationError) as by_run:
        agent.run_sync('{"operation": "pow", "a": 1, "b": 2}')
    with pytest.raises(UnknownOperationError) as by_call:
        anyio.run(get_injector().call, 'calc', {'operation': 'pow', 'a': 1, 'b': 2})
    assert (str(by_call.value), by_call.value.details) == (str(by_run.value), by_run.value.details)


@pytest.mark.parametrize(
    ('command', 'expected'),
    [
        (['list'], 'storage'),
        (['show', 'storage'], 'storage 1.0.0'),
        (['schema', 'storage'], '"additionalProperties": false'),
        (['catalog'], '"total_agentools": 1'),
    ],
)
def test_the_readme_cli_commands_answer_and_write_nothing_to_the_working_directory(
    command: list[str], expected: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, '-m', 'agentool', '--import', 'examples.storage', *command],
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_quickstart_cli_call(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            '-m',
            'agentool',
            '--import',
            'examples.calculator',
            'call',
            'calculator',
            '{"operation": "add", "a": 5, "b": 3}',
        ],
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, '8.0'), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_dispatch_answers_structured_turns_without_the_model_and_sends_free_text_to_it() -> None:
    make_calc()
    model_calls: list[int] = []

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        model_calls.append(1)
        return ModelResponse(parts=[TextPart('free text')])

    agent = Agent(FunctionModel(llm), output_type=str, capabilities=[DispatchCapability([JsonRule(agentool='calc')])])
    assert agent.run_sync('{"operation": "add", "a": 1, "b": 2}').output == '3.0'
    assert model_calls == []
    assert agent.run_sync('hello').output == 'free text'
    assert model_calls == [1]


# --- docs/index.md and docs/quickstart.md ----------------------------------------------------------


def test_a_tool_output_that_does_not_fit_its_type_is_a_typed_output_error() -> None:
    async def wrong(a: float, b: float) -> float:
        return 'x'  # pyright: ignore[reportReturnType]

    agent = create_agentool('calc', CalcInput, RoutingConfig(operation_map={'add': 'wrong', 'div': 'wrong'}), [wrong])
    with pytest.raises(OutputError) as caught:
        agent.run_sync('{"operation": "add", "a": 1, "b": 2}')
    assert caught.value.details == {'agentool': 'calc', 'operation': 'add', 'tool': 'wrong'}


def test_no_llm_no_tokens() -> None:
    result = make_calc().run_sync('{"operation": "add", "a": 1, "b": 2}')
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.requests) == (
        0,
        0,
        result.usage.requests,
    )
    assert result.usage.total_tokens == 0


@pytest.mark.parametrize(
    ('operation_map', 'tools', 'details'),
    [
        ({'add': 'add'}, ['add', 'div'], {'operation': 'div'}),
        ({'add': 'add', 'div': 'div'}, ['add'], {'operation': 'div', 'tool': 'div'}),
    ],
)
def test_create_agentool_names_the_culprit(
    operation_map: dict[str, str], tools: list[str], details: dict[str, str]
) -> None:
    functions = {'add': add, 'div': div}
    with pytest.raises(ConfigurationError) as caught:
        create_agentool('calc', CalcInput, RoutingConfig(operation_map=operation_map), [functions[t] for t in tools])
    assert {'agentool': 'calc', **details}.items() <= caught.value.details.items()
    assert 'calc' not in get_registry()  # nothing registered


def test_create_agentool_names_a_required_parameter_no_field_fills() -> None:
    async def power(a: float, exponent: float) -> float:
        return a**exponent

    with pytest.raises(ConfigurationError) as caught:
        create_agentool('calc', CalcInput, RoutingConfig(operation_map={'add': 'power', 'div': 'power'}), [power])
    problems = caught.value.details['problems']
    assert {(problem['kind'], problem['parameter']) for problem in problems} == {('unfillable_parameter', 'exponent')}


async def test_a_sync_tool_runs_in_a_worker_thread_and_its_docstring_describes_the_operation() -> None:
    threads: list[int] = []

    def mul(a: float, b: float) -> float:
        """Multiply two numbers."""
        threads.append(threading.get_ident())
        return a * b

    config = RoutingConfig(operation_map={'add': 'mul', 'div': 'mul'})
    agent = create_agentool('calc', CalcInput, config, [mul])
    assert (await agent.run('{"operation": "add", "a": 6, "b": 7}')).output == 42.0
    assert threads
    assert threads[0] != threading.get_ident()
    operations = get_registry().get_operations('calc')
    assert operations is not None
    assert operations['add']['description'] == 'Multiply two numbers.'


def test_a_tool_taking_a_context_reads_deps() -> None:
    class DepsInput(BaseOperationInput):
        operation: Literal['get']

    async def get(ctx: RunContext[dict[str, str]]) -> str:
        return ctx.deps['k']

    agent = create_agentool('depsy', DepsInput, RoutingConfig(operation_map={'get': 'get'}), [get], deps_type=dict)
    assert agent.run_sync('{"operation": "get"}', deps={'k': 'v'}).output == 'v'


# --- docs/architecture.md --------------------------------------------------------------------------


def _agentool_imports(module: str) -> set[str]:
    path = ROOT / 'agentool' / f'{module}.py'
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            found.add('.'.join(filter(None, ['agentool', node.module])))
        elif isinstance(node, ast.ImportFrom) and (node.module or '').startswith('agentool'):
            found.add(node.module or '')
    return found


def test_the_bottom_layer_imports_only_what_the_architecture_page_says() -> None:
    assert _agentool_imports('errors') == {'agentool._bounds'}  # its text bounds, a leaf
    assert _agentool_imports('_bounds') == set()
    assert _agentool_imports('base') <= {'agentool.errors'}
    assert _agentool_imports('_compat') == {'agentool.errors'}
    # telemetry sits above the core (it uses the core's argument checks) and below the injector.
    assert _agentool_imports('telemetry') == {'agentool.errors', 'agentool._options'}
    page = (ROOT / 'docs' / 'architecture.md').read_text()
    assert 'base["errors · _compat · base"]' in page
    assert 'telemetry --> core' in page
    assert 'injector --> telemetry' in page


def _private(name: str) -> bool:
    return name.startswith('_') and not (name.startswith('__') and name.endswith('__'))


def test_nothing_in_agentool_reads_or_writes_a_private_pydantic_ai_name() -> None:
    found: list[str] = []
    for path in sorted((ROOT / 'agentool').rglob('*.py')):
        tree = ast.parse(path.read_text())
        where = path.relative_to(ROOT).as_posix()
        bound: set[str] = set()  # names this module binds to pydantic-ai modules and objects
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'pydantic_ai':
                parts = (node.module or '').split('.')
                found += [f'{where}:{node.lineno} {node.module}' for part in parts if _private(part)]
                found += [f'{where}:{node.lineno} {alias.name}' for alias in node.names if _private(alias.name)]
                bound |= {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split('.')[0] == 'pydantic_ai':
                        found += [
                            f'{where}:{node.lineno} {alias.name}' for part in alias.name.split('.') if _private(part)
                        ]
                        bound.add(alias.asname or alias.name.split('.')[0])
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                base = node.value
                if isinstance(base, ast.Name) and base.id in bound:
                    found.append(f'{where}:{node.lineno} {base.id}.{node.attr}')
    assert found == []


def test_agentools_subclasses_of_pydantic_ai_classes_use_none_of_their_private_attributes() -> None:
    import agentool.testing  # noqa: F401  # pyright: ignore[reportUnusedImport]
    from agentool import dbos, durable, mcp, toolset  # noqa: F401  # pyright: ignore[reportUnusedImport]

    classes = {
        value
        for name, module in list(sys.modules.items())
        if name.startswith('agentool.')
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == name
    }
    assert classes
    clashes: list[str] = []
    for cls in sorted(classes, key=lambda kind: kind.__qualname__):
        bases = [base for base in cls.__mro__ if base.__module__.split('.')[0] == 'pydantic_ai']
        if not bases:
            continue
        source = inspect.getsource(cls)
        used = set(re.findall(r'self\.(_[a-zA-Z]\w*)', source)) | {name for name in vars(cls) if _private(name)}
        for base in bases:
            base_source = inspect.getsource(base)
            clashes += [
                f'{cls.__qualname__}.{name} (pydantic-ai {base.__qualname__})'
                for name in sorted(used)
                if _private(name) and re.search(rf'\b{name}\b', base_source)
            ]
    assert clashes == []


def test_canary_run_context_fields_the_direct_and_lean_paths_set() -> None:
    # agentool's direct path (agentool/core/_context.py) and lean runs (agentool/core/lean.py) build a
    # `RunContext` from its dataclass fields; a rename in pydantic-ai would leave a tool reading a default.
    try:
        names = {field.name for field in dataclasses.fields(RunContext)}
    except TypeError as error:
        pytest.fail(f'pydantic-ai {PYDANTIC_AI_VERSION}: RunContext is no longer a dataclass: {error}')
    needed = {'deps', 'model', 'prompt', 'agent', 'tool_name', 'usage', 'run_id', 'conversation_id'}
    needed |= {'tool_call_id', 'messages', 'run_step', 'max_retries'}
    missing = needed - names
    assert not missing, f'pydantic-ai {PYDANTIC_AI_VERSION}: RunContext lost the fields {sorted(missing)}'


def _dispatch_decisions(provider: TracerProvider, exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    make_calc()

    def llm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart('free text')])

    agent = Agent(
        FunctionModel(llm),
        output_type=str,
        capabilities=[
            DispatchCapability([JsonRule(name='json', agentool='calc')]),
            Instrumentation(InstrumentationSettings(tracer_provider=provider)),
        ],
    )
    agent.run_sync('{"operation": "add", "a": 1, "b": 2}')
    agent.run_sync('hello')
    with pytest.raises(ZeroDivisionError):
        agent.run_sync('{"operation": "div", "a": 1, "b": 0}')
    return [span for span in exporter.get_finished_spans() if span.name == DISPATCH_SPAN_NAME]


def test_an_instrumented_agent_with_dispatch_records_each_decision(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    dispatched, model, failed = _dispatch_decisions(provider, exporter)
    assert dict(dispatched.attributes or {}) == {
        OUTCOME_ATTRIBUTE: 'dispatched',
        RULE_ATTRIBUTE: 'json',
        AGENTOOL_ATTRIBUTE: 'calc',
        OPERATION_ATTRIBUTE: 'add',
    }
    assert dict(model.attributes or {}) == {OUTCOME_ATTRIBUTE: 'model'}
    assert {OUTCOME_ATTRIBUTE: 'error', RULE_ATTRIBUTE: 'json', AGENTOOL_ATTRIBUTE: 'calc'}.items() <= dict(
        failed.attributes or {}
    ).items()
    assert failed.status.status_code is StatusCode.ERROR
    assert [(event.attributes or {}).get('exception.type') for event in failed.events] == ['ZeroDivisionError']


def test_a_dispatch_whose_tool_raises_records_the_operation_it_ran(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    failed = _dispatch_decisions(provider, exporter)[-1]
    assert (failed.attributes or {}).get(OPERATION_ATTRIBUTE) == 'div'


_LAYERS = {  # the architecture page's diagram: a layer may import the layers it points to, transitively
    'base': set[str](),
    'core': {'base'},
    'telemetry': {'core'},
    'injector': {'telemetry'},
    'catalog': {'core'},
    'factory': {'injector'},
    'bridges': {'catalog', 'factory'},
    'engines': {'bridges'},
    'testing': {'bridges', 'engines'},
    'cli': {'testing'},
}
_NAMED = {
    **dict.fromkeys(['errors', '_compat', 'base'], 'base'),
    'telemetry': 'telemetry',
    'catalog': 'catalog',
    'factory': 'factory',
    **dict.fromkeys(['toolset', 'filters', 'mcp', 'mcp_http', 'model_strings', 'dispatch', '_interface'], 'bridges'),
    **dict.fromkeys(['durable', 'dbos'], 'engines'),
    'testing': 'testing',
    **dict.fromkeys(['cli', '__main__'], 'cli'),
}
# The page's exceptions: the registry's one deferred import, and the old paths kept as aliases.
_ALIASES = frozenset(
    f'agentool.core.{name}' for name in ('registry', 'catalog', 'graph', 'markdown', 'openapi', 'handle')
)


def _layer(module: str) -> str | None:
    parts = module.split('.')
    if parts[1:2] == ['core']:
        return 'injector' if parts[2:3] == ['injector'] else 'core'
    return _NAMED.get(parts[1]) if len(parts) > 1 else None


def test_every_import_points_down_the_architecture_diagram() -> None:
    def below(layer: str) -> set[str]:
        found = {layer}
        for lower in _LAYERS[layer]:
            found |= below(lower)
        return found

    graph = import_graph(ROOT / 'agentool')
    upward = [
        f'{module} -> {target}'
        for module, targets in sorted(graph.items())
        if module not in _ALIASES and (layer := _layer(module)) is not None
        for target in sorted(targets)
        if (lower := _layer(target)) is not None and lower not in below(layer)
    ]
    assert upward == []


def test_every_pydantic_ai_requirement_in_pyproject_declares_the_supported_range() -> None:
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    requirements = [
        *project['dependencies'],
        *(r for extra in project['optional-dependencies'].values() for r in extra),
    ]
    ranges = {
        re.sub(r'\[[^\]]*\]', '', re.sub(r'\s', '', requirement))
        for requirement in requirements
        if re.match(r'pydantic-ai\b', requirement)
    }
    assert ranges == {SUPPORTED}
