"""The registry at growing sizes (registration, lookup, catalog export) and memory per agentool.

Flat means the cost of one operation does not grow with the number of agentools registered: the
ratio reported is the worst per-operation cost at a larger size over the cost at the smallest.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable

from agentool import AgenToolInjector, AgenToolRegistry, get_injector, use_registry

from ._subjects import create_adder, create_arith, testmodel_agent
from ._table import Row, duration, size
from ._timing import Scale

__all__ = ('registry_rows', 'memory_row')

_PROBES = 50
"""Agentools registered (then removed) at each size to time one registration."""
_HOT = 100
"""Lookups go to the same names at every size, so the row measures the registry, not the CPU cache."""
_LOOKUP_ROUNDS = 20


def _cpu(work: Callable[[], object]) -> float:
    gc.collect()
    start = time.process_time()
    work()
    return time.process_time() - start


def _register_probes(registry: AgenToolRegistry, injector: AgenToolInjector) -> float:
    names = [f'probe_{i:03d}' for i in range(_PROBES)]
    elapsed = _cpu(lambda: [create_arith(name) for name in names]) / _PROBES
    for name in names:  # leave the size as it was
        registry.unregister(name)
        injector.unregister(name)
    return elapsed


def _lookups(registry: AgenToolRegistry, names: list[str]) -> float:
    def work() -> None:
        for _ in range(_LOOKUP_ROUNDS):
            for name in names:
                registry.get_manager(name)

    return _cpu(work) / (len(names) * _LOOKUP_ROUNDS)


def _ratio_row(benchmark: str, samples: dict[int, list[float]], target: float, cause: str = '') -> Row:
    per_size = {n: statistics.median(values) for n, values in samples.items()}
    sizes = sorted(per_size)
    smallest = sizes[0]
    worst = max(sizes[1:], key=lambda n: per_size[n] / per_size[smallest])
    return Row(
        benchmark=benchmark,
        measured=' · '.join(f'{n:,}: {duration(per_size[n])}' for n in sizes),
        ratio=per_size[worst] / per_size[smallest],
        target=target,
        cause=cause,
    )


def registry_rows(scale: Scale) -> list[Row]:
    """Registration, lookup and export cost per agentool at each of `scale.registry_sizes`.

    One registry per size, all alive at once, and samples interleaved across sizes, so machine
    load and heap size hit every size alike.
    """
    registries: dict[int, tuple[AgenToolRegistry, AgenToolInjector]] = {}
    gc.disable()  # filling is set-up, not measured; every sample below starts with a collection
    try:
        for n in scale.registry_sizes:
            with use_registry() as registry:
                for i in range(n):
                    create_arith(f'agentool_{i:05d}')
                registries[n] = registry, get_injector()
    finally:
        gc.enable()
    registration: dict[int, list[float]] = {n: [] for n in registries}
    lookup: dict[int, list[float]] = {n: [] for n in registries}
    export: dict[int, list[float]] = {n: [] for n in registries}
    for _ in range(scale.repeats):
        for n, (registry, injector) in registries.items():
            with use_registry(registry):
                registration[n].append(_register_probes(registry, injector))
            lookup[n].append(_lookups(registry, registry.list_names()[:_HOT]))
    for _ in range(max(1, scale.repeats // 2)):  # export is linear in size: fewer repeats suffice
        for n, (registry, _injector) in registries.items():
            export[n].append(_cpu(registry.export_catalog) / n)
    smallest = 'vs at the smallest size'
    return [
        _ratio_row(f'Registry: registration (`create_agentool`) per agentool, {smallest}', registration, 1.2),
        _ratio_row(f'Registry: lookup (`get_manager`) of the same {_HOT} names, {smallest}', lookup, 1.2),
        _ratio_row(f'Registry: `export_catalog()` per agentool (linear = flat), {smallest}', export, 1.2),
    ]


def _allocated(make: Callable[[int], object], count: int) -> float:
    """Bytes of Python heap (tracemalloc) held per object made by `make`, all kept alive."""
    keep = [make(i) for i in range(10)]  # warm up: lazy imports and caches are not per agentool
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        keep += [make(i) for i in range(10, 10 + count)]
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del keep
    return (after - before) / count


def memory_row(scale: Scale) -> Row:
    """Python-heap memory of one agentool (its agent, registry entry and injector entry) vs a bare agent.

    The agentool has one operation routed to one tool, so both sides hold the same tool.
    """
    with use_registry():
        per_agentool = _allocated(lambda i: create_adder(f'agentool_{i:05d}'), scale.memory_agentools)
    per_agent = _allocated(lambda i: testmodel_agent(), scale.memory_agentools)
    return Row(
        cause="per agentool, its manager holds the compiled route (the tool's signature, read once per function "
        "and shared, and its argument readers) and its catalog metadata; an operation's requirements are kept "
        'only when it needs more than the schema checks.',
        benchmark='Memory per agentool (one operation, tracemalloc) vs a bare `Agent` with the same tool and output',
        measured=f'{size(per_agentool)} vs {size(per_agent)}',
        ratio=per_agentool / per_agent,
        target=1.2,
    )
