"""The support assistant example: commands by dispatch, free text by the model; in process and on the CLI."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from pydantic_ai.models import override_allow_model_requests

from agentool import ToolFailedError
from agentool.dispatch import dispatch_record
from agentool.testing import AgentDouble
from examples.support_assistant import MODEL_ENV, TicketDesk, create_support_assistant
from tests.agentools import ROOT


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    with override_allow_model_requests(False):
        yield


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
