"""OpenTelemetry spans and metrics for agentool operations that run outside pydantic-ai's own instrumentation.

Only `opentelemetry-api` is needed; with no tracer or meter provider it is a shared no-op.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from time import perf_counter
from typing import Literal, get_args
from weakref import WeakKeyDictionary

from opentelemetry.context import get_current
from opentelemetry.metrics import Counter, Histogram, MeterProvider, NoOpMeterProvider, get_meter_provider
from opentelemetry.trace import (
    INVALID_SPAN,
    NoOpTracer,
    ProxyTracer,
    ProxyTracerProvider,
    Span,
    Tracer,
    get_current_span,
)
from opentelemetry.util.types import AttributeValue

from ._options import check_choice, check_instance, check_text, check_tracer
from .errors import ConfigurationError

__all__ = (
    'operation_span',
    'dispatch_span',
    'record_dispatch',
    'DispatchOutcome',
    'DISPATCH_SPAN_NAME',
    'RULE_ATTRIBUTE',
    'OUTCOME_ATTRIBUTE',
    'in_trace',
    'Surface',
    'TRACER_NAME',
    'AGENTOOL_ATTRIBUTE',
    'OPERATION_ATTRIBUTE',
    'SURFACE_ATTRIBUTE',
    'TOOL_NAME_ATTRIBUTE',
    'OPERATION_NAME_ATTRIBUTE',
    'ERROR_TYPE_ATTRIBUTE',
    'METER_NAME',
    'CALLS_METRIC',
    'DURATION_METRIC',
    'ERRORS_METRIC',
)

TRACER_NAME = 'agentool'
"""Instrumentation scope of agentool's own spans."""
AGENTOOL_ATTRIBUTE = 'agentool.name'
OPERATION_ATTRIBUTE = 'agentool.operation'
SURFACE_ATTRIBUTE = 'agentool.surface'
RULE_ATTRIBUTE = 'agentool.dispatch.rule'
OUTCOME_ATTRIBUTE = 'agentool.dispatch.outcome'
DISPATCH_SPAN_NAME = 'agentool dispatch'
TOOL_NAME_ATTRIBUTE = 'gen_ai.tool.name'
"""`{agentool}.{operation}` on an operation span that is the call's only tool span (see `operation_span`)."""
OPERATION_NAME_ATTRIBUTE = 'gen_ai.operation.name'
ERROR_TYPE_ATTRIBUTE = 'error.type'
"""The exception class of a failed operation, on the errors counter (OpenTelemetry's convention)."""

METER_NAME = 'agentool'
"""Instrumentation scope of agentool's metrics."""
CALLS_METRIC = 'agentool.operation.calls'
DURATION_METRIC = 'agentool.operation.duration'
ERRORS_METRIC = 'agentool.operation.errors'

DispatchOutcome = Literal['dispatched', 'model', 'fell_through', 'error']
"""What a dispatch decision came to: answered, sent to the model, fell through to it, or an error."""

Surface = Literal['direct', 'agent', 'toolset', 'mcp']
"""Where the call came from: the injector's direct path, an agent run, the LLM toolset or the MCP server."""

_INSIDE_A_TOOL_SPAN: tuple[Surface, ...] = ('agent', 'toolset')
"""Surfaces whose call pydantic-ai's instrumentation already traces as a tool call of its own."""

_SURFACES: tuple[Surface, ...] = get_args(Surface)
_OWN_ATTRIBUTES = (
    AGENTOOL_ATTRIBUTE,
    OPERATION_ATTRIBUTE,
    SURFACE_ATTRIBUTE,
    TOOL_NAME_ATTRIBUTE,
    OPERATION_NAME_ATTRIBUTE,
)
_OUTCOMES: tuple[DispatchOutcome, ...] = get_args(DispatchOutcome)

_NO_SPAN: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)

# Unlike `trace.get_tracer_provider()`, it does not read the environment on every call.
_GLOBAL = ProxyTracerProvider()


def in_trace() -> bool:
    """Whether a trace is in progress here: a context-variable read, far cheaper than asking for a tracer."""
    current = get_current()
    # An empty context has no span: the common untraced case is decided without a lookup.
    return bool(current) and get_current_span(current).is_recording()


class _Instruments:
    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter(METER_NAME)
        self.calls: Counter = meter.create_counter(CALLS_METRIC, unit='{call}', description='agentool operation calls')
        self.duration: Histogram = meter.create_histogram(
            DURATION_METRIC, unit='s', description='How long agentool operations took'
        )
        self.errors: Counter = meter.create_counter(
            ERRORS_METRIC, unit='{error}', description='agentool operation calls that raised, by exception type'
        )


# Providers of opentelemetry-api itself (the proxy before one is set, the no-op) record nothing.
_API_PACKAGE = NoOpMeterProvider.__module__  # `opentelemetry.metrics`
_INSTRUMENTS: WeakKeyDictionary[MeterProvider, _Instruments] = WeakKeyDictionary()
# The global provider's instruments once it is set (only once), skipping `get_meter_provider()`.
_SETTLED: list[_Instruments | None] = []


def _instruments(provider: MeterProvider | None) -> _Instruments | None:
    """The instruments of `provider` (else of the global one), or None when metrics are off."""
    settles = provider is None
    if provider is None:
        if _SETTLED:
            return _SETTLED[0]
        provider = get_meter_provider()
    module = type(provider).__module__
    if module == _API_PACKAGE or module.startswith(f'{_API_PACKAGE}.'):
        found = None
    elif (found := _INSTRUMENTS.get(provider)) is None:
        found = _INSTRUMENTS[provider] = _Instruments(provider)
    if settles and (found is not None or isinstance(provider, NoOpMeterProvider)):
        _SETTLED.append(found)
    return found


@contextmanager
def _measured(
    span: AbstractContextManager[Span], instruments: _Instruments, attributes: dict[str, AttributeValue]
) -> Generator[Span]:
    start = perf_counter()
    try:
        with span as current:
            yield current
    except BaseException as error:
        instruments.errors.add(1, {**attributes, ERROR_TYPE_ATTRIBUTE: type(error).__qualname__})
        raise
    finally:
        instruments.calls.add(1, attributes)
        instruments.duration.record(perf_counter() - start, attributes)


def operation_span(
    agentool: str,
    operation: str,
    *,
    surface: Surface = 'direct',
    tracer: Tracer | None = None,
    attributes: Mapping[str, AttributeValue] | None = None,
    meter_provider: MeterProvider | None = None,
) -> AbstractContextManager[Span]:
    """Run the block inside a gen_ai span `execute_tool {agentool}.{operation}`, measured.

    The telemetry guide gives its attributes and instruments; `attributes` add to them, never replace.
    """
    check_text('agentool', agentool)
    check_text('operation', operation)
    check_choice('surface', surface, _SURFACES)
    check_tracer('tracer', tracer)
    if meter_provider is not None:  # the usual `None` skips the slower abstract-class test
        check_instance('meter_provider', meter_provider, MeterProvider)
    # Only the mapping itself: OpenTelemetry checks (and drops) a bad value.
    if attributes is not None:
        check_instance('attributes', attributes, Mapping)
        if own := [key for key in _OWN_ATTRIBUTES if key in attributes]:
            raise ConfigurationError(
                f'attributes may not set {", ".join(map(repr, own))}: the span sets them from its arguments',
                option='attributes',
                value=repr(attributes),
            )
    instruments = _instruments(meter_provider)
    tracer = _tracer(tracer)
    if tracer is None and instruments is None:
        return _NO_SPAN
    measured: dict[str, AttributeValue] = {
        AGENTOOL_ATTRIBUTE: agentool,
        OPERATION_ATTRIBUTE: operation,
        SURFACE_ATTRIBUTE: surface,
    }
    if tracer is None:
        span = _NO_SPAN
    else:
        span_attributes: dict[str, AttributeValue] = {**measured, OPERATION_NAME_ATTRIBUTE: 'execute_tool'}
        if surface not in _INSIDE_A_TOOL_SPAN:
            span_attributes[TOOL_NAME_ATTRIBUTE] = f'{agentool}.{operation}'
        if attributes:
            span_attributes.update(attributes)
        span = tracer.start_as_current_span(f'execute_tool {agentool}.{operation}', attributes=span_attributes)
    return span if instruments is None else _measured(span, instruments, measured)


def dispatch_span(*, tracer: Tracer | None = None) -> AbstractContextManager[Span]:
    """A context manager around one dispatch decision; `record_dispatch` sets its attributes."""
    check_tracer('tracer', tracer)
    tracer = _tracer(tracer)
    return _NO_SPAN if tracer is None else tracer.start_as_current_span(DISPATCH_SPAN_NAME)


def _tracer(given: Tracer | None) -> Tracer | None:
    """`given`, else the global provider's tracer; `None` when tracing is off (a proxy or no-op tracer)."""
    if given is None or isinstance(given, (NoOpTracer, ProxyTracer)):
        given = _GLOBAL.get_tracer(TRACER_NAME)
        if isinstance(given, (ProxyTracer, NoOpTracer)):
            return None
    return given


def record_dispatch(
    span: Span, *, outcome: DispatchOutcome, rule: str | None, agentool: str | None, operation: str | None
) -> None:
    """Set the decision's attributes on `span`: outcome, and the rule, agentool and operation when known."""
    check_instance('span', span, Span)
    check_choice('outcome', outcome, _OUTCOMES)
    check_text('rule', rule, optional=True)
    check_text('agentool', agentool, optional=True)
    check_text('operation', operation, optional=True)
    if not span.is_recording():
        return
    known = {RULE_ATTRIBUTE: rule, AGENTOOL_ATTRIBUTE: agentool, OPERATION_ATTRIBUTE: operation}
    attributes: dict[str, AttributeValue] = {key: value for key, value in known.items() if value is not None}
    span.set_attributes({OUTCOME_ATTRIBUTE: outcome, **attributes})
