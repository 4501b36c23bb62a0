"""`AgenToolAgent`: the pydantic-ai `Agent` of an agentool, whose plain runs skip the agent graph.

An agentool's run is deterministic and always takes the same two steps, so once the agent has
run through the graph once (which shows the shape of its messages), `run` and `run_sync` answer
directly (`agentool.core.agent.lean`): same output, messages, usage and errors, a fraction of the cost.
Everything that needs the graph still gets it: see `lean_blocker` and the model page of the docs.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import NoneType
from typing import Any, Literal, cast

from opentelemetry.trace import NoOpTracer, ProxyTracer, ProxyTracerProvider
from pydantic_ai import (
    Agent,
    AgentRunResult,
    AgentSpec,
    CancellationToken,
    Conversation,
    DeferredToolResults,
    InstrumentationSettings,
)
from pydantic_ai.agent import AgentModelSettings, AgentRetries, EventStreamHandler
from pydantic_ai.capabilities import AgentCapability
from pydantic_ai.messages import ModelMessage, UserContent
from pydantic_ai.models import KnownModelName, Model
from pydantic_ai.output import OutputSpec
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.usage import RunUsage, UsageLimits
from pydantic_ai.workspaces import WorkspaceBackend, WorkspaceRef

from ..._options import check_flag
from ...errors import InvalidInputError
from ..model import AgenToolModel
from ._lean_plan import AGAIN, LeanPlan, learn_plan
from .lean import answer, history_allows_lean

__all__ = ('AgenToolAgent',)

_LEAN_KWARGS = frozenset(
    {'output_type', 'deps_type', 'name', 'description', 'system_prompt', 'tools', 'instructions', 'model_settings'}
)
"""Constructor options that change nothing a lean run reproduces (settings are ignored by the model)."""

_overridden: ContextVar[frozenset[int]] = ContextVar('agentool_overridden_agents', default=frozenset())
"""Ids of the agents whose `override()` is in effect in this context: their runs take the graph."""

_GLOBAL_TRACING = ProxyTracerProvider()

_WATCH_MARK = '__agentool_watched__'


class _InstrumentAll:
    """What the public `Agent.instrument_all` was last given since `import agentool`.

    pydantic-ai keeps that process-wide setting under a private name, which agentool does not
    read, so `import agentool` wraps the function once to record it (see `_watch_instrument_all`).
    """

    setting: InstrumentationSettings | bool = False


def _watch_instrument_all() -> None:
    """Wrap `Agent.instrument_all` to record its setting (idempotent). A call before the wrap is not seen."""
    original = Agent.instrument_all
    if getattr(original, _WATCH_MARK, False):
        return

    def instrument_all(instrument: InstrumentationSettings | bool = True) -> None:
        original(instrument)
        _InstrumentAll.setting = instrument

    instrument_all.__doc__ = original.__doc__
    instrument_all.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(instrument_all, _WATCH_MARK, True)
    Agent.instrument_all = staticmethod(instrument_all)  # type: ignore[method-assign]


_watch_instrument_all()


def _instrumented(agent: Agent[Any, Any]) -> bool:
    """Whether pydantic-ai instruments `agent`'s runs: its own `instrument` when set, else `instrument_all`'s."""
    return bool(agent.instrument if agent.instrument is not None else _InstrumentAll.setting)


class AgenToolAgent(Agent[Any, Any]):
    """The `Agent` `create_agentool` returns: a pydantic-ai `Agent` whose plain runs are lean.

    A run is *lean* when it needs nothing but the agentool: a text prompt, optionally `deps` and
    `message_history`, on an agent built with only the options agentool itself passes. The
    decision is made once per agent (construction options, first run) and per call (arguments,
    `override()`, instrumentation). Set `lean = False` to force every run through the graph.

    Args:
        model: The agentool's model.
        lean: Whether plain runs may skip the graph (`False` for debugging).
        **agent_kwargs: Passed to `pydantic_ai.Agent`.
    """

    def __init__(self, model: AgenToolModel, *, lean: bool = True, **agent_kwargs: Any) -> None:
        super().__init__(model, **agent_kwargs)
        self._lean_model = model
        self._lean_plan: LeanPlan | None = None
        self._lean_learned = False
        self.lean_runs = 0
        """How many runs this agent answered lean (a debugging aid: compare with the runs you made)."""
        self.lean_blocker: str | None = None if lean else 'lean=False'
        """Why this agent's runs always take the graph, or `None` when plain runs may be lean."""
        if self.lean_blocker is None:
            self.lean_blocker = _construction_blocker(agent_kwargs)

    @property
    def lean(self) -> bool:
        """Whether plain runs of this agent may skip the graph; set `False` to force the graph."""
        return self.lean_blocker is None

    @lean.setter
    def lean(self, value: bool) -> None:
        check_flag('lean', value)  # a truthy string is not a flag
        if not value:
            self.lean_blocker = 'lean=False'
        elif self.lean_blocker == 'lean=False':
            self.lean_blocker = None

    def _block(self, reason: str) -> None:
        if self.lean_blocker is None:
            self.lean_blocker = reason

    async def run(
        self,
        user_prompt: str | Sequence[UserContent] | None = None,
        *,
        output_type: OutputSpec[Any] | None = None,
        conversation: Conversation | None = None,
        message_history: Sequence[ModelMessage] | None = None,
        deferred_tool_results: DeferredToolResults | None = None,
        conversation_id: str | None = None,
        run_id: str | None = None,
        model: Model | KnownModelName | str | None = None,
        instructions: Any = None,
        deps: Any = None,
        model_settings: AgentModelSettings[Any] | None = None,
        usage_limits: UsageLimits | None = None,
        cancellation_token: CancellationToken | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - pydantic-ai's signature
        usage: RunUsage | None = None,
        metadata: Any = None,
        retries: int | AgentRetries | None = None,
        infer_name: bool = True,
        toolsets: Sequence[AbstractToolset[Any]] | None = None,
        event_stream_handler: EventStreamHandler[Any] | None = None,
        capabilities: Sequence[AgentCapability[Any]] | None = None,
        workspace: WorkspaceBackend | WorkspaceRef | Literal['new'] | None = None,
        spec: dict[str, Any] | AgentSpec | None = None,
    ) -> AgentRunResult[Any]:
        """Run the agent; lean when nothing but the agentool is needed, otherwise through the graph.

        Arguments and result are those of `pydantic_ai.Agent.run`.
        """
        plain = (
            self.lean_blocker is None
            and type(user_prompt) is str
            and output_type is None
            and conversation is None
            and deferred_tool_results is None
            and conversation_id is None
            and run_id is None
            and model is None
            and instructions is None
            and model_settings is None
            and usage_limits is None
            and cancellation_token is None
            and timeout is None
            and usage is None
            and metadata is None
            and retries is None
            and toolsets is None
            and event_stream_handler is None
            and capabilities is None
            and workspace is None
            and spec is None
            # Deps not given for a deps type: the graph's manager tool builds them (see `manager_tool`).
            and (deps is not None or self.deps_type in (None, NoneType, object))
            and self.model is self._lean_model
            and id(self) not in _overridden.get()
            and not _instrumented(self)
            and not _tracing_installed()
        )
        if (
            plain
            and (plan := self._lean_plan) is not None
            and (not message_history or history_allows_lean(message_history))
        ):
            assert isinstance(user_prompt, str)
            self.lean_runs += 1
            return await answer(plan, self._lean_model, self, user_prompt, deps, message_history)
        if user_prompt is None and not message_history and conversation is None and deferred_tool_results is None:
            # pydantic-ai would refuse it with its own `UserError`; the input is what is missing.
            name = self._lean_model.model_name
            raise InvalidInputError(f'agentool {name!r}: no input provided (no prompt)', agentool=name)
        result = await super().run(
            user_prompt,
            output_type=output_type,
            conversation=conversation,
            message_history=message_history,
            deferred_tool_results=deferred_tool_results,
            conversation_id=conversation_id,
            run_id=run_id,
            model=model,
            instructions=instructions,
            deps=deps,
            model_settings=model_settings,
            usage_limits=usage_limits,
            cancellation_token=cancellation_token,
            timeout=timeout,
            usage=usage,
            metadata=metadata,
            retries=retries,
            infer_name=infer_name,
            toolsets=toolsets,
            event_stream_handler=event_stream_handler,
            capabilities=capabilities,
            workspace=workspace,
            spec=spec,
        )
        if plain and not self._lean_learned and not message_history:
            # The first plain run shows the agent's shape; a shape we do not know keeps the graph for good.
            plan = learn_plan(result, self._lean_model.output_parameters, self.output_type)
            if plan != AGAIN:
                self._lean_learned = True
                self._lean_plan = plan if isinstance(plan, LeanPlan) else None
                if self._lean_plan is None:
                    self._block('its first run took a shape a lean run does not reproduce')
        return result

    @contextmanager
    def override(self, *args: Any, **kwargs: Any) -> Generator[None]:
        """`pydantic_ai.Agent.override`; runs inside it take the graph."""
        with super().override(*args, **kwargs):
            token = _overridden.set(_overridden.get() | {id(self)})
            try:
                yield
            finally:
                _overridden.reset(token)

    # Registering anything that takes part in a run makes every later run take the graph.

    def system_prompt(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.system_prompt`; the agent's runs then take the graph."""
        self._block('a system prompt function')
        return cast(Any, super().system_prompt(*args, **kwargs))

    def instructions(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.instructions`; the agent's runs then take the graph."""
        self._block('an instructions function')
        return cast(Any, super().instructions(*args, **kwargs))

    def output_validator(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.output_validator`; the agent's runs then take the graph."""
        self._block('an output validator')
        return cast(Any, super().output_validator(*args, **kwargs))

    def tool(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.tool`; the agent's runs then take the graph."""
        self._block('a tool registered on the agent')
        return cast(Any, super().tool(*args, **kwargs))

    def tool_plain(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.tool_plain`; the agent's runs then take the graph."""
        self._block('a tool registered on the agent')
        return cast(Any, super().tool_plain(*args, **kwargs))

    def toolset(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.toolset`; the agent's runs then take the graph."""
        self._block('a toolset registered on the agent')
        return cast(Any, super().toolset(*args, **kwargs))

    def on_event(self, *args: Any, **kwargs: Any) -> Any:
        """`pydantic_ai.Agent.on_event`; the agent's runs then take the graph."""
        self._block('an event hook')
        return cast(Any, super().on_event(*args, **kwargs))


def _construction_blocker(agent_kwargs: dict[str, Any]) -> str | None:
    """Why an agent built with `agent_kwargs` can never run lean, or `None`."""
    if extra := sorted(set(agent_kwargs) - _LEAN_KWARGS):
        return f'constructor option {extra[0]!r}'
    if len(agent_kwargs.get('tools', ())) != 1:
        return 'tools besides the manager tool'
    instructions = agent_kwargs.get('instructions')
    static = instructions is None or isinstance(instructions, str)
    if not static and not (isinstance(instructions, Sequence) and all(isinstance(i, str) for i in instructions)):  # pyright: ignore[reportUnknownVariableType]
        return 'instructions that are not plain text'
    return None


def _tracing_installed() -> bool:
    """Whether an OpenTelemetry tracer provider is installed: then runs take the graph, which traces them."""
    return not isinstance(_GLOBAL_TRACING.get_tracer('agentool'), (ProxyTracer, NoOpTracer))
