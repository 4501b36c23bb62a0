"""The dependency graph between agentools: cycles (found iteratively: a deep graph is never a
`RecursionError`) and the typed errors that name what is wrong with it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ...errors import (
    AgenToolError,
    DependencyCycleError,
    DependencyError,
    InjectorValidationError,
    did_you_mean,
    quote,
    suggest,
)
from ..request import type_label
from ._targets import Target
from ._wiring import DepsShape

Edges = Callable[[str], Iterable[str]]


def all_cycles(nodes: Iterable[str], edges: Edges) -> list[list[str]]:
    """One path for each distinct cycle a depth-first search meets, rotated to start at its smallest name."""
    done: set[str] = set()
    found: dict[tuple[str, ...], list[str]] = {}
    for root in nodes:
        if root in done:
            continue
        path = [root]
        on_path = {root}
        stack: list[Iterator[str]] = [iter(edges(root))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                done.add(node := path.pop())
                on_path.discard(node)
            elif nxt in on_path:
                cycle = path[path.index(nxt) :]
                turn = cycle.index(min(cycle))
                key = (*cycle[turn:], *cycle[:turn])
                found.setdefault(key, [*key, key[0]])
            elif nxt not in done:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(edges(nxt)))
    return [found[key] for key in sorted(found)]


def cycle_error(path: list[str]) -> DependencyCycleError:
    """The error reporting the agentool cycle `path` (`['a', 'b', 'a']` reads `a → b → a`)."""
    return DependencyCycleError(
        f'agentools depend on each other in a cycle: {" → ".join(path)}', agentool=path[0], path=path
    )


def not_an_agentool(owner: str, dependency: str) -> DependencyError:
    return DependencyError(
        f'agentool {owner!r} depends on {dependency!r}, which is registered but is not an agentool; '
        'dependencies must name agentools',
        agentool=owner,
        dependency=dependency,
    )


def dependency_problem(
    owner: str, dependency: str, targets: Mapping[str, Target], *, note: str = ''
) -> DependencyError | None:
    """Why `owner` cannot depend on `dependency` (not registered, or not an agentool), else `None`."""
    if (other := targets.get(dependency)) is not None:
        return not_an_agentool(owner, dependency) if other.manager is None else None
    missing = f'agentool {owner!r} depends on {quote(dependency)}, which is not registered with the injector'
    hint = did_you_mean(suggestions := suggest(dependency, list(targets)))
    return DependencyError(missing + hint + note, agentool=owner, dependency=dependency, suggestions=suggestions)


def graph_problems(
    targets: Mapping[str, Target], edges_of: Callable[[Target], list[str]], shape_of: Callable[[Any], DepsShape]
) -> list[AgenToolError]:
    """Every problem of the graph at once: bad dependencies, mistyped handle fields, cycles."""
    problems: list[AgenToolError] = []
    for name in sorted(targets):
        target = targets[name]
        for dependency in dict.fromkeys(edges_of(target)):
            if (problem := dependency_problem(name, dependency, targets)) is not None:
                problems.append(problem)
        for field in shape_of(target.deps_type).handles:
            other = targets.get(field.agentool)
            if other is None or other.manager is None or field.key is Any:
                continue
            actual = other.manager.config.output_type or str
            if field.key != actual:
                problems.append(
                    DependencyError(
                        f'agentool {name!r}: deps field {field.name!r} is '
                        f'AgenToolHandle[{type_label(field.key)}] but agentool {field.agentool!r} outputs '
                        f'{type_label(actual)}',
                        agentool=name,
                        field=field.name,
                        dependency=field.agentool,
                    )
                )

    def edge_list(node: str) -> list[str]:
        return edges_of(targets[node]) if node in targets else []

    problems += (cycle_error(path) for path in all_cycles(sorted(targets), edge_list))
    return problems


def check_new_edges(
    name: str, edges: list[str], targets: Mapping[str, Target], edges_of: Callable[[Target], list[str]]
) -> None:
    """Raise if `name` depending on `edges` names a registered non-agentool or closes a cycle."""
    for dependency in edges:
        other = targets.get(dependency)
        if other is not None and other.manager is None and dependency != name:
            raise not_an_agentool(name, dependency)

    def edges_from(node: str) -> list[str]:
        if node == name:
            return edges
        return edges_of(targets[node]) if node in targets else []

    # The graph had no cycle before (every registration is checked): a cycle now goes through `name`.
    for cycle in all_cycles([name], edges_from):
        if name in cycle:
            ring = cycle[:-1]
            turn = ring.index(name)
            raise cycle_error([*ring[turn:], *ring[:turn], name])


def raise_problems(problems: list[AgenToolError]) -> None:
    """Raise one `InjectorValidationError` listing every distinct problem, if there is any."""
    unique = list({p.message: p for p in problems}.values())
    if unique:
        listing = ''.join(f'\n  - {type(p).__name__}: {p.message}' for p in unique)
        raise InjectorValidationError(f'the injector found {len(unique)} problem(s):{listing}', problems=unique)
