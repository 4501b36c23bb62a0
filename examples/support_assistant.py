"""A support assistant whose UI commands hit an agentool directly and whose free text reaches the model.

The `tickets` agentool keeps support tickets in the run's deps (a `TicketDesk`). The assistant is an
LLM agent with `DispatchCapability` in front of it:

- `/status 12` and `/close 12` (typed commands) and `{"operation": "open", "subject": "..."}` (what a
  UI button posts) are answered by `tickets` at once, with no model request;
- anything else ("my printer is on fire") goes to the model, which may open a ticket through the
  `tickets_open` tool (`AgenToolToolset`).

**Model.** Offline by default: a scripted `AgentDouble` (from `agentool.testing`) plays the LLM: it
opens a ticket with the user's words as the subject and answers with its number. To use a real
model, set `AGENTOOL_SUPPORT_MODEL` to a pydantic-ai model name (e.g. `openai:gpt-5`) with that
provider's package and key installed. Never required.

Run it: `python -m examples.support_assistant "/status 1" "my printer is on fire" "/status 2"`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel
from pydantic_ai import Agent, RunContext, ToolFailed
from pydantic_ai.models import Model

from agentool import AgenToolError, AgenToolToolset, BaseOperationInput, RoutingConfig, create_agentool, get_registry
from agentool.dispatch import CommandRule, DispatchCapability, JsonRule
from agentool.testing import AgentDouble, Call, OutputFrom, Script, ScriptRun

__all__ = (
    'MODEL_ENV',
    'INSTRUCTIONS',
    'Ticket',
    'TicketDesk',
    'TicketsInput',
    'create_tickets',
    'support_rules',
    'offline_model',
    'model_from_env',
    'create_support_assistant',
)

MODEL_ENV = 'AGENTOOL_SUPPORT_MODEL'
"""Environment variable naming a real pydantic-ai model (`provider:model`); unset means offline."""

INSTRUCTIONS = (
    'You are a support assistant. When the user reports a problem, open a ticket with tickets_open '
    'and tell them its number. Answer briefly.'
)


class Ticket(BaseModel):
    """One support ticket."""

    id: int
    subject: str
    status: Literal['open', 'closed']


@dataclass
class TicketDesk:
    """Where the tickets live: the deps of every run."""

    tickets: dict[int, Ticket] = field(default_factory=dict[int, Ticket])


class TicketsInput(BaseOperationInput):
    """Open a ticket, read its status or close it."""

    operation: Literal['open', 'status', 'close']
    ticket_id: int | None = None
    subject: str | None = None


async def open_ticket(ctx: RunContext[TicketDesk], subject: str) -> Ticket:
    """Open a ticket about <subject>."""
    ticket = Ticket(id=len(ctx.deps.tickets) + 1, subject=subject, status='open')
    ctx.deps.tickets[ticket.id] = ticket
    return ticket


def _find(desk: TicketDesk, ticket_id: int) -> Ticket:
    if ticket_id not in desk.tickets:
        raise ToolFailed(f'there is no ticket #{ticket_id}')
    return desk.tickets[ticket_id]


async def ticket_status(ctx: RunContext[TicketDesk], ticket_id: int) -> Ticket:
    """The ticket numbered <ticket_id>."""
    return _find(ctx.deps, ticket_id)


async def close_ticket(ctx: RunContext[TicketDesk], ticket_id: int) -> Ticket:
    """Close the ticket numbered <ticket_id>."""
    ticket = _find(ctx.deps, ticket_id).model_copy(update={'status': 'closed'})
    ctx.deps.tickets[ticket_id] = ticket
    return ticket


def create_tickets() -> None:
    """Register the `tickets` agentool in the registry in effect."""
    create_agentool(
        'tickets',
        TicketsInput,
        RoutingConfig(operation_map={'open': 'open_ticket', 'status': 'ticket_status', 'close': 'close_ticket'}),
        [open_ticket, ticket_status, close_ticket],
        deps_type=TicketDesk,
        description='Support tickets: open, status, close.',
    )


def support_rules() -> list[CommandRule | JsonRule]:
    """The UI's commands, tried in order: `/status N`, `/close N`, then any JSON object for `tickets`."""
    return [
        CommandRule(name='status', pattern=r'/status\s+(?P<ticket_id>\S+)', agentool='tickets', operation='status'),
        CommandRule(name='close', pattern=r'/close\s+(?P<ticket_id>\S+)', agentool='tickets', operation='close'),
        JsonRule(name='ui-button', agentool='tickets'),
    ]


def _reply(run: ScriptRun) -> str:
    ticket: Ticket = run.result('tickets_open')
    return f'Sorry about that: I opened ticket #{ticket.id} ({ticket.subject!r}).'


def offline_model() -> AgentDouble:
    """The deterministic stand-in for an LLM: open a ticket about the message, answer with its number."""
    return AgentDouble(
        Script(Call('tickets_open', lambda run: {'subject': run.prompt}), OutputFrom(_reply)),
        name='offline-support',
    )


def model_from_env() -> Model | str:
    """The model named by `$AGENTOOL_SUPPORT_MODEL`, else a fresh `offline_model()`."""
    return os.environ.get(MODEL_ENV, '').strip() or offline_model()


def create_support_assistant(model: Model | str | None = None) -> tuple[Agent[TicketDesk, str], DispatchCapability]:
    """The assistant and its dispatch capability (whose `counts` say what reached the model).

    Args:
        model: The model; by default `model_from_env()` (offline unless `$AGENTOOL_SUPPORT_MODEL` is set).
    """
    if 'tickets' not in get_registry():
        create_tickets()
    dispatch = DispatchCapability(support_rules())
    agent = Agent(
        model_from_env() if model is None else model,
        deps_type=TicketDesk,
        output_type=str,
        toolsets=[AgenToolToolset(include=['tickets.open'])],
        capabilities=[dispatch],
        instructions=INSTRUCTIONS,
        name='support',
    )
    return agent, dispatch


def main() -> None:
    """Entry point for `python -m examples.support_assistant [MESSAGE ...]`."""
    messages = sys.argv[1:] or ['my printer is on fire', '/status 1', '{"operation": "close", "ticket_id": 1}']
    agent, dispatch = create_support_assistant()
    desk = TicketDesk()
    history = None
    for message in messages:
        try:
            result = agent.run_sync(message, deps=desk, message_history=history)
        except AgenToolError as error:  # e.g. `/status 99` for a ticket that does not exist
            print(f'> {message}\nerror: {error}')
            continue
        history = result.all_messages()
        print(f'> {message}\n{result.output}')
    counts = dispatch.counts
    print(f'dispatched: {counts.dispatched}, sent to the model: {counts.sent_to_model}')


if __name__ == '__main__':
    main()
