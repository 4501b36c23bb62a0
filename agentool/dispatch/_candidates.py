"""The agentools a dispatch may run: each one's operations and input limit, looked up only when asked.

Every rule reads the input limit of the agentool it would send a prompt to, so that a prompt over
it is refused, or declined, before it is parsed or matched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property

from ..core.definition import DEFAULT_MAX_INPUT_BYTES
from ..core.registry import AgenToolRegistry
from ..errors import ConfigurationError, DispatchTargetError, clip, did_you_mean, quote, suggest

__all__ = ('Candidates', 'input_limit', 'utf8_size_over', 'unknown_target')


class Candidates(Mapping[str, Sequence[str]]):
    """Each candidate agentool's operations, each looked up only when a rule asks for it."""

    def __init__(self, registry: AgenToolRegistry, names: Sequence[str] | None) -> None:
        self._registry = registry
        self._names = names

    @cached_property
    def _candidates(self) -> list[str]:
        registry = self._registry
        for name in self._names or ():
            if name not in registry:
                suggestions = suggest(name, registry.list_names())
                raise ConfigurationError(
                    f'DispatchCapability(agentools=...) names {quote(name)}, which is not registered'
                    f'{did_you_mean(suggestions)}',
                    option='agentools',
                    value=quote(name),
                    suggestions=suggestions,
                )
        return registry.list_names() if self._names is None else list(self._names)

    def max_input_bytes(self, name: str | None) -> int:
        """The input limit of agentool `name` (the default if not registered); with `None`, the largest candidate's."""
        if name is not None:
            return self._registry.require(name).max_input_bytes if name in self._registry else DEFAULT_MAX_INPUT_BYTES
        limits = [self._registry.require(candidate).max_input_bytes for candidate in self._candidates]
        return max(limits, default=DEFAULT_MAX_INPUT_BYTES)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        # Every registered agentool is a candidate unless `agentools=` lists them (a short list).
        return key in self._registry if self._names is None else key in self._candidates

    def __getitem__(self, key: str) -> Sequence[str]:
        if key not in self:
            raise KeyError(key)
        # From the configuration, not the manager: an agentool that cannot run refuses only when a prompt picks it.
        return list(self._registry.require(key).routing_config.operation_map)

    def __iter__(self) -> Iterator[str]:
        return iter(self._candidates)

    def __len__(self) -> int:
        return len(self._candidates)


def input_limit(operations: Mapping[str, Sequence[str]], name: str | None) -> int:
    """`Candidates.max_input_bytes`; the default limit for a plain mapping (a rule's `match` called in a test)."""
    if isinstance(operations, Candidates):
        return operations.max_input_bytes(name)
    return DEFAULT_MAX_INPUT_BYTES


def utf8_size_over(text: str, limit: int) -> int | None:
    """The UTF-8 size of `text` when it exceeds `limit` bytes, else `None`, counted as the manager counts.

    Not encoded when the length alone decides: a character is 1 to 4 bytes.
    """
    if len(text) * 4 <= limit:
        return None
    size = len(text) if text.isascii() else len(text.encode('utf-8', 'surrogatepass'))
    return size if size > limit else None


def unknown_target(rule: str, name: str, known: Iterable[str], *, scope: str = '') -> DispatchTargetError:
    """The error for rule `rule` naming agentool `name`, not among `known`; `scope` ends "which is not registered"."""
    suggestions = suggest(name, known)
    return DispatchTargetError(
        f'rule {rule!r} names agentool {quote(name)}, which is not registered{scope}{did_you_mean(suggestions)}',
        rule=rule,
        target=clip(name),
        target_length=len(name),
        suggestions=suggestions,
    )
