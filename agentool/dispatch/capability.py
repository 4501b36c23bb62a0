"""`DispatchCapability`: ordered rules in front of any pydantic-ai agent answer structured turns without the model.

It uses one public hook, `wrap_run`: when a rule claims the turn, the hook returns without calling the handler.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from opentelemetry.trace import Span, Tracer
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
from pydantic_ai.run import AgentRunResult

from .._options import check_choice, refuse
from ..core.injector import AgenToolInjector, get_injector
from ..core.injector.serialization import serialize_input
from ..core.registry import AgenToolRegistry, get_registry
from ..errors import AgenToolError, ConfigurationError, InvalidInputError, clip
from ..telemetry import DispatchOutcome, dispatch_span, record_dispatch
from ._answer import DispatchRecord, build_result, fit_output
from .rules import Candidates, Dispatch, DispatchRequest, DispatchRule, unknown_target

__all__ = ('DispatchCapability', 'DispatchCounts', 'DepsSource')

DepsSource = Literal['run', 'injector']
"""Where a dispatched agentool's deps come from: the agent run's `deps`, or the injector's wiring."""


@dataclass(frozen=True, kw_only=True)
class DispatchCounts:
    """A snapshot of a capability's decisions since it was made (or last reset)."""

    dispatched: int = 0
    """Turns an agentool answered."""
    sent_to_model: int = 0
    """Turns the model answered (no rule matched, or a matched rule fell through)."""
    fell_through: int = 0
    """Of `sent_to_model`: turns a rule matched whose input failed validation (`on_invalid='fall_through'`)."""
    errors: int = 0
    """Turns a rule claimed that ended in a typed error."""
    by_rule: Mapping[str, int] = field(default_factory=dict[str, int])


class _Counter:
    """The live counts; a lock keeps them exact when runs share the capability across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._outcomes = Counter[DispatchOutcome]()
            self._by_rule = Counter[str]()

    def add(self, outcome: DispatchOutcome, rule: str | None) -> None:
        with self._lock:
            self._outcomes[outcome] += 1
            if outcome == 'dispatched' and rule is not None:
                self._by_rule[rule] += 1

    def snapshot(self) -> DispatchCounts:
        with self._lock:
            outcomes = self._outcomes
            return DispatchCounts(
                dispatched=outcomes['dispatched'],
                sent_to_model=outcomes['model'] + outcomes['fell_through'],
                fell_through=outcomes['fell_through'],
                errors=outcomes['error'],
                by_rule=dict(self._by_rule),
            )


@dataclass
class DispatchCapability(AbstractCapability[Any]):
    """Answer a turn with an agentool when a rule claims it (the first to); otherwise let the model answer.

    The answer is validated into the agent's `output_type`; the dispatch guide gives the rest.
    """

    rules: Sequence[DispatchRule]
    agentools: Sequence[str] | None = field(default=None, kw_only=True)
    """Candidates for rules that find their target (a `JsonRule` without `agentool`); default all."""
    deps: DepsSource = field(default='run', kw_only=True)
    """`'run'` gives the tools the run's `deps`; `'injector'` lets the injector build the agentool's own."""
    injector: AgenToolInjector | None = field(default=None, kw_only=True)
    """Runs the agentools; by default the injector in effect at run time."""
    registry: AgenToolRegistry | None = field(default=None, kw_only=True)
    """Where targets are looked up; by default the injector's registry, else the one in effect."""
    tracer: Tracer | None = field(default=None, kw_only=True)
    """Tracer of the `agentool dispatch` span; by default the run's, else the global one."""
    _counter: _Counter = field(default_factory=_Counter, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        rules, agentools, deps = cast(object, self.rules), cast(object, self.agentools), cast(object, self.deps)
        if not _sequence_of(rules, DispatchRule):
            raise refuse('rules', 'a list of dispatch rules (JsonRule, CommandRule, PredicateRule, ...)', rules)
        if agentools is not None and not _sequence_of(agentools, str):
            raise refuse('agentools', 'a list of agentool names or None', agentools)
        check_choice('deps', deps, ('run', 'injector'))

    @property
    def counts(self) -> DispatchCounts:
        return self._counter.snapshot()

    def reset_counts(self) -> None:
        self._counter.reset()

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        prompt = ctx.prompt
        if not isinstance(prompt, str) or not self.rules:  # no prompt, or images and the like: the model's
            self._counter.add('model', None)
            return await handler()
        with dispatch_span(tracer=self.tracer or ctx.tracer) as span:
            result = await self._decide(ctx, prompt, span)
        return await handler() if result is None else result

    async def _decide(self, ctx: RunContext[Any], prompt: str, span: Span) -> AgentRunResult[Any] | None:
        request = DispatchRequest(prompt=prompt, deps=ctx.deps, ctx=ctx)
        registry = self.registry
        if registry is None:
            registry = (self.injector or get_injector()).registry or get_registry()
        operations = Candidates(registry, self.agentools)
        outcome: DispatchOutcome = 'model'
        rule_name: str | None = None
        target: str | None = None
        operation: str | None = None
        try:
            for rule in self.rules:
                rule_name = rule.label
                try:
                    found = rule.match(request, operations)
                    if found is None:
                        continue
                    if not isinstance(cast(object, found), Dispatch):  # a rule of your own returning something else
                        raise ConfigurationError(
                            f'rule {rule_name!r}: match() must return a Dispatch or None; got {found!r}',
                            rule=rule_name,
                            value=repr(found),
                        )
                    target = found.agentool
                    if target not in registry:
                        raise unknown_target(rule_name, target, registry.list_names())
                    manager = registry.get_manager(target)
                    # Checked as the injector checks it: an input it would refuse is refused under `on_invalid`.
                    data = serialize_input(target, found.input)
                    operation = manager.operation_of(manager.validate_json(data))
                except ValueError as error:  # invalid input: refused unread (too large), unreadable, or invalid
                    if isinstance(error, AgenToolError) and not isinstance(error, InvalidInputError):
                        raise
                    if rule.on_invalid == 'fall_through':
                        outcome = 'fell_through'
                        return None
                    if isinstance(error, InvalidInputError):
                        target = error.agentool
                        error.details.setdefault('rule', rule_name)
                        raise
                    target = getattr(rule, 'agentool', None)
                    raise InvalidInputError(
                        f'rule {rule_name!r}: cannot build the input from the prompt: {clip(str(error))}',
                        agentool=target,
                        rule=rule_name,
                    ) from error
                # The operation is known before the call: recorded even if the tool raises.
                record = DispatchRecord(rule=rule_name, agentool=target, operation=operation)
                # The text, not the validated model: the injector validates text on its fast path.
                # `deps=None` leaves the deps to the injector, as the agentool's own `agent.run` does.
                deps = ctx.deps if self.deps == 'run' else None
                value = await (self.injector or get_injector()).call(target, data, deps=deps)
                spec: object = str if ctx.agent is None else ctx.agent.output_type
                outcome = 'dispatched'  # an error building the result is recorded as 'error' below
                return build_result(ctx, prompt, fit_output(value, spec, record), record)
            rule_name = None
            return None
        except BaseException:
            outcome = 'error'
            raise
        finally:
            self._counter.add(outcome, rule_name)
            record_dispatch(span, outcome=outcome, rule=rule_name, agentool=target, operation=operation)


def _sequence_of(value: object, item_type: type) -> bool:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        return False
    return all(isinstance(item, item_type) for item in cast('Sequence[object]', value))
