"""The lean/graph differential check shared by the lean-run tests: run the same input both ways, compare all."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, AgentRunResult
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from agentool import AgenToolAgent, AgenToolError, OutputError, get_injector

_VOLATILE = frozenset({'timestamp', 'run_id', 'conversation_id'})


@dataclass
class Outcome:
    """A run's result, or the error it raised."""

    result: AgentRunResult[Any] | None = None
    error: BaseException | None = None


async def outcome(agent: AgenToolAgent, prompt: str, **kwargs: Any) -> Outcome:
    try:
        return Outcome(result=await agent.run(prompt, **kwargs))
    except Exception as error:  # compared below: class, message, details
        return Outcome(error=error)


def _stable(value: Any) -> Any:
    """A JSON dump without the fields that legitimately differ between two runs (ids, timestamps)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_stable(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def message_shape(messages: list[ModelMessage]) -> Any:
    """Every field of every message and part, ids and timestamps aside."""
    return _stable(ModelMessagesTypeAdapter.dump_python(messages, mode='json'))


def _links(result: AgentRunResult[Any]) -> list[tuple[bool, bool]]:
    """Which messages carry the run's id and its conversation id (compared between the two paths)."""
    new = result.new_messages()
    assert new, 'a run adds messages'
    assert {m.run_id for m in new} == {result.run_id}
    return [(m.run_id == result.run_id, m.conversation_id == result.conversation_id) for m in result.all_messages()]


async def differential(
    agent: AgenToolAgent, prompt: str, *, deps: Callable[[], Any] = lambda: None, **kwargs: Any
) -> Outcome:
    """Run `prompt` through the forced graph and the lean path; assert they are indistinguishable."""
    agent.lean = False
    try:
        graph = await outcome(agent, prompt, deps=deps(), **kwargs)
    finally:
        agent.lean = True
    before = agent.lean_runs
    lean = await outcome(agent, prompt, deps=deps(), **kwargs)
    assert agent.lean_runs == before + 1, f'the run was not lean: {agent.lean_blocker}'
    if graph.error is not None or lean.error is not None:
        assert type(lean.error) is type(graph.error), (graph.error, lean.error)
        assert str(lean.error) == str(graph.error)
        if isinstance(graph.error, AgenToolError):
            assert isinstance(lean.error, AgenToolError)
            assert lean.error.details == graph.error.details
        return lean
    assert graph.result is not None
    assert lean.result is not None
    g, n = graph.result, lean.result
    assert type(n.output) is type(g.output)
    assert n.output == g.output
    assert message_shape(n.all_messages()) == message_shape(g.all_messages())
    assert message_shape(n.new_messages()) == message_shape(g.new_messages())
    assert n.usage == g.usage
    assert n.metadata == g.metadata
    assert n.run_id != g.run_id
    assert _links(n) == _links(g)
    return lean


async def every_path(agent: AgenToolAgent, prompt: str, *, warm: str, lean_plan: bool = True) -> list[Any]:
    """`prompt`'s output (or `(OutputError, reason)`) on the graph, a lean run, the model string and `injector.call`.

    `warm` is run first, to show the agent's shape; `lean_plan`: whether that teaches a lean plan
    (native and prompted outputs keep the graph), checked on the lean run.
    """
    seen: list[Any] = []

    async def attempt(run: Callable[[], Awaitable[Any]]) -> None:
        try:
            seen.append(await run())
        except OutputError as error:
            seen.append((OutputError, error.details.get('reason')))

    async def graph() -> Any:
        agent.lean = False
        try:
            return (await agent.run(prompt)).output
        finally:
            agent.lean = True

    async def lean() -> Any:
        before = agent.lean_runs
        try:
            return (await agent.run(prompt)).output
        finally:
            assert agent.lean_runs == before + lean_plan  # the lean path answered (or refused) it

    async def plain() -> Any:
        return (await Agent(f'agentool:{agent.name}', output_type=agent.output_type).run(prompt)).output

    name = agent.name
    assert name is not None
    await agent.run(warm)
    for run in (graph, lean, plain, lambda: get_injector().call(name, prompt)):
        await attempt(run)
    return seen
