"""Dispatch seen from outside: its telemetry span per decision, and the support assistant example."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from agentool import InputValidationError, JsonRule, ToolFailedError
from agentool.dispatch import DISPATCH_PROVIDER, CommandRule, DispatchCapability, dispatch_record
from agentool.telemetry import (
    AGENTOOL_ATTRIBUTE,
    DISPATCH_SPAN_NAME,
    OPERATION_ATTRIBUTE,
    OUTCOME_ATTRIBUTE,
    RULE_ATTRIBUTE,
    dispatch_span,
    record_dispatch,
)
from agentool.testing import AgentDouble
from examples.support_assistant import MODEL_ENV, Ticket, TicketDesk, create_support_assistant, create_tickets
from tests.agentools import make_calc

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    with override_allow_model_requests(False):
        yield


def _decisions(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == DISPATCH_SPAN_NAME]


async def test_each_decision_gets_a_span_inside_the_agent_run(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    create_tickets()
    rule = CommandRule(name='status', pattern=r'/status\s+(?P<ticket_id>\S+)', agentool='tickets', operation='status')
    agent = Agent(
        TestModel(),
        deps_type=TicketDesk,
        capabilities=[Instrumentation(InstrumentationSettings(tracer_provider=provider)), DispatchCapability([rule])],
    )
    desk = TicketDesk(tickets={1: Ticket(id=1, subject='s', status='open')})
    await agent.run('/status 1', deps=desk)
    await agent.run('hello', deps=desk)
    with pytest.raises(InputValidationError):
        await agent.run('/status one', deps=desk)
    with pytest.raises(ToolFailedError):
        await agent.run('/status 2', deps=desk)
    spans = _decisions(exporter)
    assert [dict(span.attributes or {}) for span in spans] == [
        {
            OUTCOME_ATTRIBUTE: 'dispatched',
            RULE_ATTRIBUTE: 'status',
            AGENTOOL_ATTRIBUTE: 'tickets',
            OPERATION_ATTRIBUTE: 'status',
        },
        {OUTCOME_ATTRIBUTE: 'model'},
        {OUTCOME_ATTRIBUTE: 'error', RULE_ATTRIBUTE: 'status', AGENTOOL_ATTRIBUTE: 'tickets'},  # invalid input
        {  # the tool failed: the operation it ran is known
            OUTCOME_ATTRIBUTE: 'error',
            RULE_ATTRIBUTE: 'status',
            AGENTOOL_ATTRIBUTE: 'tickets',
            OPERATION_ATTRIBUTE: 'status',
        },
    ]
    runs = [span for span in exporter.get_finished_spans() if span.name.startswith('invoke_agent')]
    first = spans[0]
    assert first.parent is not None
    assert first.parent.span_id in {run.context.span_id for run in runs if run.context is not None}
    assert not spans[2].status.is_ok  # the error is recorded on the span


def test_without_a_tracer_provider_the_span_is_a_no_op() -> None:
    with dispatch_span() as span:
        record_dispatch(span, outcome='model', rule=None, agentool=None, operation=None)
    assert not span.is_recording()


async def test_the_support_assistant_answers_commands_itself_and_free_text_with_the_model() -> None:
    agent, dispatch = create_support_assistant()
    double = agent.model
    assert isinstance(double, AgentDouble)
    desk = TicketDesk()
    first = await agent.run('my printer is on fire', deps=desk)
    assert first.output == "Sorry about that: I opened ticket #1 ('my printer is on fire')."
    second = await agent.run('/status 1', deps=desk, message_history=first.all_messages())
    assert second.output == '{"id":1,"subject":"my printer is on fire","status":"open"}'
    third = await agent.run('{"operation": "close", "ticket_id": 1}', deps=desk, message_history=second.all_messages())
    assert desk.tickets[1].status == 'closed'
    assert [dispatch_record(m) is not None for m in third.all_messages()].count(True) == 2
    assert len(double.requests) == 2  # the free-text turn's two model steps, and nothing for the commands
    assert (dispatch.counts.dispatched, dispatch.counts.sent_to_model) == (2, 1)
    with pytest.raises(ToolFailedError, match='no ticket #7'):
        await agent.run('/close 7', deps=desk)


def test_the_support_assistant_runs_from_the_command_line() -> None:
    env = {'PATH': '/usr/bin:/bin', 'PYTHONPATH': str(ROOT)}
    done = subprocess.run(
        [sys.executable, '-m', 'examples.support_assistant', 'help, my screen is blank', '/status 1', '/status x'],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "opened ticket #1 ('help, my screen is blank')" in done.stdout
    assert '"status":"open"' in done.stdout
    assert "error: invalid input for agentool 'tickets'" in done.stdout
    assert 'dispatched: 1, sent to the model: 1' in done.stdout


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
    from agentool.dispatch import dispatch_record

    assert dispatch_record(ModelResponse(parts=[], provider_name=DISPATCH_PROVIDER, metadata=metadata)) is None
