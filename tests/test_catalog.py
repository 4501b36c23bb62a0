"""export_catalog: JSON-serialisable, deterministic, independent of registration order and time."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from agentool import AgenToolRegistry, BaseOperationInput, RoutingConfig, create_agentool, use_registry
from examples.calculator import create_calculator
from tests.agentools import create_storage


class PingInput(BaseOperationInput):
    operation: Literal['ping']


async def ping() -> str:
    """Answer."""
    return 'pong'


def _build(order: list[str]) -> str:
    with use_registry() as registry:
        for name in order:
            if name == 'calculator':
                create_calculator()
            elif name == 'storage':
                create_storage()
            else:
                create_agentool(name, PingInput, RoutingConfig(operation_map={'ping': 'ping'}), [ping])
        catalog = dict(registry.export_catalog())
        datetime.fromisoformat(str(catalog.pop('generated_at')))  # the one key that depends on time
        return json.dumps(catalog)


def test_catalog_is_json_and_deterministic() -> None:
    first = _build(['storage', 'zeta', 'calculator', 'alpha'])
    second = _build(['alpha', 'calculator', 'zeta', 'storage'])
    assert first == second  # registration order and creation time do not matter
    catalog = json.loads(first)
    assert catalog['catalog_version'] == '1'
    assert catalog['version'] == '1.0.0'
    assert catalog['total_agentools'] == 4
    assert [entry['name'] for entry in catalog['agentools']] == ['alpha', 'calculator', 'storage', 'zeta']


def test_operations_keep_routing_order_and_fields_schema_order(registry: AgenToolRegistry) -> None:
    create_storage()
    (entry,) = registry.export_catalog()['agentools']
    assert [op['name'] for op in entry['operations']] == ['read', 'write', 'list', 'delete']
    assert [f['name'] for f in entry['operations'][1]['fields']] == ['key', 'data']
    assert entry['operations'][2]['fields'] == []  # `list` reads nothing
    assert list(entry['input_schema']['properties']) == ['operation', 'key', 'data']


def test_empty_registry_catalog(registry: AgenToolRegistry) -> None:
    catalog = registry.export_catalog()
    assert datetime.fromisoformat(catalog['generated_at']).tzinfo is not None
    assert catalog == {
        'version': '1.0.0',
        'catalog_version': '1',
        'generated_at': catalog['generated_at'],
        'total_agentools': 0,
        'agentools': [],
    }
