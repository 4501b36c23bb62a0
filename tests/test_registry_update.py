"""Registry changes: atomic update, unregister, clear."""

from __future__ import annotations

from typing import Any

import pytest

from agentool import AgenToolRegistry, ConfigurationError, InvalidUpdateError
from examples.calculator import create_calculator


def test_update_changes_metadata_and_the_catalog(registry: AgenToolRegistry) -> None:
    create_calculator()
    before = registry.require('calculator')
    assert registry.update('calculator', description='Sums.', version='2.0.0', tags=('math',), examples=[]) is True
    updated = registry.require('calculator')
    assert (updated.description, updated.version, updated.tags) == ('Sums.', '2.0.0', ['math'])
    assert updated.examples == []
    assert updated.created_at == before.created_at
    assert updated.updated_at > before.updated_at
    assert before.description == 'Basic arithmetic on two numbers.'  # the old value object is untouched
    (entry,) = registry.export_catalog()['agentools']
    assert (entry['description'], entry['version'], entry['tags']) == ('Sums.', '2.0.0', ['math'])
    assert registry.get_manager('calculator').config is updated


async def test_an_updated_agentool_still_runs(registry: AgenToolRegistry) -> None:
    calculator = create_calculator()
    registry.update('calculator', description='Still adds.')
    assert (await calculator.run('{"operation": "add", "a": 1, "b": 2}')).output == 3.0


@pytest.mark.parametrize(
    ('changes', 'field'),
    [
        ({'description': 'ok', 'routing_config': None}, 'routing_config'),
        ({'version': '9', 'created_at': None}, 'created_at'),
        ({'tags': ['fine'], 'version': 3}, 'version'),
        ({'description': 'ok', 'tags': 'math'}, 'tags'),
        ({'tags': ['a', 1]}, 'tags'),
        ({'dependencies': ['ledger']}, 'dependencies'),  # wiring: re-create with replace=True
        ({'examples': [{'input': {}}, 'not a dict']}, 'examples'),
        ({'description': b'bytes'}, 'description'),
    ],
)
def test_a_failed_update_changes_nothing(registry: AgenToolRegistry, changes: dict[str, Any], field: str) -> None:
    create_calculator()
    before = registry.require('calculator')
    manager = registry.get_manager('calculator')
    with pytest.raises(InvalidUpdateError) as caught:
        registry.update('calculator', **changes)
    assert isinstance(caught.value, ConfigurationError | ValueError)
    assert caught.value.details == {'agentool': 'calculator', 'field': field}
    assert field in str(caught.value)
    assert registry.require('calculator') is before
    assert registry.get_manager('calculator') is manager
    assert before.description == 'Basic arithmetic on two numbers.'
    assert before.tags == ['math', 'example']


def test_update_description_may_be_cleared(registry: AgenToolRegistry) -> None:
    create_calculator()
    assert registry.update('calculator', description=None)
    assert registry.require('calculator').description is None


def test_unregister_removes_one(registry: AgenToolRegistry) -> None:
    create_calculator()
    registry.update('calculator', tags=['x'])
    from tests.agentools import create_storage

    create_storage()
    assert registry.unregister('calculator') is True
    assert registry.list_names() == ['storage']
    assert registry.get('calculator') is None
    assert registry.unregister('calculator') is False  # nothing to remove, as in the guide


def test_clear_removes_all(registry: AgenToolRegistry) -> None:
    create_calculator()
    registry.clear()
    assert registry.list_names() == []
    assert registry.export_catalog()['agentools'] == []
