"""The registry argument every catalog function takes, checked where it is given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._options import check_instance

if TYPE_CHECKING:
    from ..core.definition import AgenToolConfig

__all__ = ('check_registry',)


@runtime_checkable
class _Registry(Protocol):
    """What the catalog reads from a registry, recognised by its methods: the registry module imports the catalog."""

    def list_names(self) -> list[str]: ...

    def require(self, name: str) -> AgenToolConfig: ...


def check_registry(registry: object) -> None:
    """Raise `ConfigurationError` unless `registry` is a registry."""
    check_instance('registry', registry, _Registry, expected='an AgenToolRegistry')
