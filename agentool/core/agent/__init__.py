"""`AgenToolAgent`: the pydantic-ai `Agent` of an agentool, whose plain runs skip the agent graph.

After one run through the graph, its `lean` capability answers plain runs alike (same output,
messages, usage and errors); anything that needs the graph gets it (`lean_blocker`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic_ai import Agent

from ..._options import check_flag
from ..model import AgenToolModel
from .lean import LeanRuns, overridden, plain_runs

__all__ = ('AgenToolAgent',)

_LEAN_KWARGS = frozenset(
    {'output_type', 'deps_type', 'name', 'description', 'system_prompt', 'tools', 'instructions', 'model_settings'}
)
"""Constructor options that change nothing a lean run reproduces (settings are ignored by the model)."""


def _blocks_lean(name: str, reason: str) -> Callable[..., Any]:
    registers = getattr(Agent, name)

    def method(self: AgenToolAgent, *args: Any, **kwargs: Any) -> Any:
        self._lean_runs.block(reason)  # pyright: ignore[reportPrivateUsage]  # the agent's own capability
        return registers(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"`pydantic_ai.Agent.{name}`; the agent's runs then take the graph."
    return method


class AgenToolAgent(Agent[Any, Any]):
    """The `Agent` `create_agentool` returns: a pydantic-ai `Agent` whose plain runs are lean.

    A run is *lean* when it needs nothing but the agentool: a text prompt, optionally `deps` and
    `message_history`, on an agent built with only the options agentool itself passes. `lean=False`
    (for debugging) forces the graph; `agent_kwargs` go to `pydantic_ai.Agent`.
    """

    def __init__(self, model: AgenToolModel, *, lean: bool = True, **agent_kwargs: Any) -> None:
        runs = LeanRuns(
            model=model,
            deps_type=agent_kwargs.get('deps_type'),
            blocker=_construction_blocker(agent_kwargs) if lean else 'lean=False',
        )
        capabilities = [runs, *agent_kwargs.pop('capabilities', ())]
        super().__init__(model, capabilities=capabilities, **agent_kwargs)
        self._lean_runs = runs

    @property
    def lean_runs(self) -> int:
        """How many runs this agent answered lean (a debugging aid)."""
        return self._lean_runs.runs

    @property
    def lean_blocker(self) -> str | None:
        """Why this agent's runs always take the graph, or `None` when plain runs may be lean."""
        return self._lean_runs.blocker

    @property
    def lean(self) -> bool:
        """Whether plain runs of this agent may skip the graph; set `False` to force the graph."""
        return self.lean_blocker is None

    @lean.setter
    def lean(self, value: bool) -> None:
        check_flag('lean', value)  # a truthy string is not a flag
        if not value:
            self._lean_runs.block('lean=False')
        elif self._lean_runs.blocker == 'lean=False':
            self._lean_runs.blocker = None

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.run`; a run given no `event_stream_handler` and no run-level
        `instructions` (which its run context does not show) may be lean."""
        if kwargs.get('event_stream_handler') is not None or kwargs.get('instructions') is not None:
            return await super().run(*args, **kwargs)
        token = plain_runs.set(plain_runs.get() | {id(self)})
        try:
            return await super().run(*args, **kwargs)
        finally:
            plain_runs.reset(token)

    @contextmanager
    def override(self, *args: Any, **kwargs: Any) -> Generator[None]:
        """`pydantic_ai.Agent.override`; runs inside it take the graph."""
        with super().override(*args, **kwargs):
            token = overridden.set(overridden.get() | {id(self)})
            try:
                yield
            finally:
                overridden.reset(token)

    # Registering anything that takes part in a run makes every later run take the graph.
    system_prompt = _blocks_lean('system_prompt', 'a system prompt function')
    instructions = _blocks_lean('instructions', 'an instructions function')
    output_validator = _blocks_lean('output_validator', 'an output validator')
    tool = _blocks_lean('tool', 'a tool registered on the agent')
    tool_plain = _blocks_lean('tool_plain', 'a tool registered on the agent')
    toolset = _blocks_lean('toolset', 'a toolset registered on the agent')
    on_event = _blocks_lean('on_event', 'an event hook')


def _construction_blocker(agent_kwargs: dict[str, Any]) -> str | None:
    """Why an agent built with `agent_kwargs` can never run lean, or `None`."""
    if extra := sorted(set(agent_kwargs) - _LEAN_KWARGS):
        return f'constructor option {extra[0]!r}'
    if len(agent_kwargs.get('tools', ())) != 1:
        return 'tools besides the manager tool'
    instructions = agent_kwargs.get('instructions') or ()
    texts = [instructions] if isinstance(instructions, str) else instructions
    if not (isinstance(texts, Sequence) and all(isinstance(i, str) for i in texts)):  # pyright: ignore[reportUnknownVariableType]
        return 'instructions that are not plain text'
    return None
