"""Every Python snippet of the architecture guide (`agentool-architecture.md`), run as the guide writes it.

One test per snippet, in the guide's order, with the guide's names and call forms; the only
adaptation is imports (and, where a snippet leaves a helper undefined, a definition of it).
Where agentool deliberately differs (typed output, typed errors), the test says so and
docs/guides/coming-from-the-guide.md explains why.
"""
# pyright: reportPrivateUsage=false, reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportUnknownLambdaType=false, reportMissingParameterType=false
# pyright: reportUnknownParameterType=false, reportArgumentType=false, reportDeprecated=false

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Dict, List, Literal, Optional, Type  # noqa: UP035  # the guide's spelling

import pytest
from pydantic import BaseModel, ValidationError
from pydantic_ai import Agent, RunContext, models
from pydantic_ai.models import Model

from agentool import BaseOperationInput, create_agentool, get_injector, register_agentool_models, use_injector
from agentool.core.injector import AgenToolInjector, serialize_to_json_string
from agentool.core.manager import AgenToolManager
from agentool.core.model import AgenToolModel
from agentool.core.registry import AgenToolConfig, AgenToolRegistry, RoutingConfig, ToolMetadata
from agentool.factory import extract_tool_metadata, infer_output_type
from examples.calculator import CalculatorInput, create_calculator

# --- the guide's storage example, shared by several snippets -------------------------------------

_store: dict[str, Any] = {}


class StorageInput(BaseOperationInput):
    operation: Literal['read', 'write']
    key: str
    data: Any = None


async def storage_read(ctx: RunContext[Any], key: str) -> Any:
    """Read a value."""
    return _store.get(key)


async def storage_write(ctx: RunContext[Any], key: str, data: Any) -> Any:  # Any: untyped output, JSON text
    """Write a value."""
    _store[key] = data
    return {'stored': key}


def _storage_routing() -> RoutingConfig:
    # "Routing Configuration", verbatim.
    routing = RoutingConfig(
        operation_field='operation',  # Field containing the operation
        operation_map={
            'read': ('storage_read', lambda x: {'key': x.key}),
            'write': ('storage_write', lambda x: {'key': x.key, 'data': x.data}),
        },
    )
    return routing


# --- 1. AgenToolModel -----------------------------------------------------------------------------


def test_model_key_methods_request_signature() -> None:
    """`async def request(self, messages, model_settings, model_request_parameters) -> ModelResponse`."""
    signature = inspect.signature(AgenToolModel.request)
    assert list(signature.parameters) == ['self', 'messages', 'model_settings', 'model_request_parameters']
    assert inspect.iscoroutinefunction(AgenToolModel.request)


def test_model_configuration_lookup() -> None:
    """`config = AgenToolRegistry.get(self.name)`; `None` when there is no configuration."""
    model = AgenToolModel('storage')
    config = AgenToolRegistry.get(model.name)
    assert config is None
    create_agentool('storage', StorageInput, _storage_routing(), [storage_read, storage_write])
    config = AgenToolRegistry.get(model.name)
    assert config is not None
    assert config.input_schema is StorageInput


# --- 2. AgenToolManager ---------------------------------------------------------------------------


async def test_manager_call_steps() -> None:
    """The six steps of `AgenToolManager.__call__`, done by hand on the manager's own attributes."""
    config = AgenToolConfig(input_schema=StorageInput, routing_config=_storage_routing())
    manager = AgenToolManager('storage', config, [storage_read, storage_write])
    ctx: Any = None
    kwargs = {'operation': 'write', 'key': 'k', 'data': 'v'}
    input_data = manager.input_schema(**kwargs)  # 1. Create input model from kwargs
    operation = getattr(input_data, manager.routing_config.operation_field)  # 2. Extract operation
    tool_name, transform_func = manager.routing_config.operation_map[operation]  # 3. Look up routing
    assert transform_func is not None
    tool_args = transform_func(input_data)  # 4. Transform arguments
    tool_func = {'storage_read': storage_read, 'storage_write': storage_write}[tool_name]
    result = await tool_func(ctx, **tool_args)  # 5. Execute tool
    assert result == {'stored': 'k'}
    assert await manager(ctx, **kwargs) == result  # 6. the manager does all of it
    assert await manager(ctx, operation='read', key='k') == 'v'


async def test_manager_routing_configuration() -> None:
    routing = _storage_routing()
    agent = create_agentool('storage', StorageInput, routing, [storage_read, storage_write])
    await agent.run('{"operation": "write", "key": "test", "data": "hello"}')
    assert (await agent.run('{"operation": "read", "key": "test"}')).output == 'hello'


# --- 3. AgenToolRegistry --------------------------------------------------------------------------


def test_registry_data_structures() -> None:
    """Every field of the guide's `AgenToolConfig` dataclass."""
    meta = extract_tool_metadata(storage_read)
    config = AgenToolConfig(
        input_schema=StorageInput,
        routing_config=_storage_routing(),
        output_type=None,
        description='Key-value storage.',
        version='1.2.0',
        tags=['storage'],
        tools_metadata=[meta],
        dependencies=['pydantic'],
        examples=[{'input': {'operation': 'read', 'key': 'k'}}],
    )
    assert (config.description, config.version, config.tags) == ('Key-value storage.', '1.2.0', ['storage'])
    assert config.tools_metadata == [meta]
    assert config.dependencies == ['pydantic']
    assert isinstance(config.created_at, datetime)
    assert isinstance(config.updated_at, datetime)


def test_registry_data_structures_positionally() -> None:
    """The guide's `AgenToolConfig` fields in its order, positionally; agentool's own fields follow by keyword."""
    meta = extract_tool_metadata(storage_read)
    stamp = datetime(2024, 1, 2, tzinfo=UTC)
    routing = _storage_routing()
    config = AgenToolConfig(
        StorageInput, routing, None, 'Key-value storage.', '1.2.0', ['storage'], [meta], ['x'], [], stamp, stamp
    )
    assert (config.input_schema, config.routing_config, config.output_type) == (StorageInput, routing, None)
    assert (config.description, config.version, config.tags) == ('Key-value storage.', '1.2.0', ['storage'])
    assert (config.tools_metadata, config.dependencies, config.examples) == ([meta], ['x'], [])
    assert (config.created_at, config.updated_at) == (stamp, stamp)
    assert AgenToolConfig(StorageInput, routing).tools == ()
    with pytest.raises(TypeError):
        AgenToolConfig(StorageInput, routing, None, None, '1', [], [], [], [], stamp, stamp, ())  # type: ignore[misc]


def test_registry_operations() -> None:
    config = AgenToolConfig(input_schema=StorageInput, routing_config=_storage_routing())

    # Registration
    AgenToolRegistry.register('storage', config)

    # Retrieval
    config = AgenToolRegistry.get('storage')

    # Introspection
    names = AgenToolRegistry.list_names()
    detailed_info = AgenToolRegistry.list_detailed()
    schema = AgenToolRegistry.get_schema('storage')

    assert config is not None
    assert names == ['storage']
    assert detailed_info[0]['name'] == 'storage'
    assert detailed_info[0]['operations'] == ['read', 'write']
    assert schema is not None
    assert set(schema['properties']) == {'operation', 'key', 'data'}


# --- 4. AgenToolInjector --------------------------------------------------------------------------


async def test_injector_key_features() -> None:
    """`run(agent_name, input_data)`: serialises, gets the agent, builds deps, runs; `override(**agents)`."""
    with use_injector() as injector:
        create_agentool('storage', StorageInput, _storage_routing(), [storage_read, storage_write])
        agent = injector.get('storage')
        assert isinstance(agent, Agent)
        assert injector.create_deps('storage') is None  # no deps_type: nothing to inject
        json_input = serialize_to_json_string({'operation': 'write', 'key': 'a', 'data': 1})
        assert json_input == '{"operation": "write", "key": "a", "data": 1}'
        result = await injector.run('storage', {'operation': 'write', 'key': 'a', 'data': 1})
        assert json.loads(result.output) == {'stored': 'a'}  # tools returning Any: JSON text, as in the guide

        async def fake_read(ctx: RunContext[Any], key: str) -> Any:
            return 'from the mock'

        class MockInput(BaseOperationInput):
            operation: Literal['read']
            key: str

        mock = create_agentool(
            'mock_storage',
            MockInput,
            RoutingConfig(operation_map={'read': ('fake_read', lambda x: {'key': x.key})}),
            [fake_read],
        )
        with injector.override(storage=mock):
            result = await injector.run('storage', {'operation': 'read', 'key': 'a'})
            assert result.output == 'from the mock'


@pytest.mark.parametrize(
    ('data', 'text'),
    [
        ('{"already": "json"}', '{"already": "json"}'),  # Strings (validates if already valid JSON)
        ({'a': 1}, '{"a": 1}'),  # Dicts, lists, tuples
        ([1, 2], '[1, 2]'),
        ((1, 2), '[1, 2]'),
        (CalculatorInput(operation='add', a=1, b=2), CalculatorInput(operation='add', a=1, b=2).model_dump_json()),
        (3, '3'),  # Basic types (int, float, bool, None)
        (1.5, '1.5'),
        (False, 'false'),
        (None, 'null'),
        (datetime(2024, 1, 2, 3, 4, 5), '"2024-01-02T03:04:05"'),  # Datetime objects (ISO format)
        (Decimal('2.50'), '"2.50"'),  # Decimal objects (exact)
    ],
)
def test_injector_serialization_support(data: Any, text: str) -> None:
    assert serialize_to_json_string(data) == text


# --- 5. Factory functions -------------------------------------------------------------------------


async def test_factory_create_agentool_steps_by_hand() -> None:
    """The seven steps of `create_agentool`, written out as the guide does; the agent then runs."""
    name = 'storage'
    tools = [storage_read, storage_write]
    with use_injector():
        # 1. Extract tool metadata
        tools_metadata = [extract_tool_metadata(tool) for tool in tools]
        # 2. Infer output type from tool annotations
        output_type = infer_output_type(tools_metadata)
        # 3. Create and register configuration
        config = AgenToolConfig(
            input_schema=StorageInput,
            routing_config=_storage_routing(),
            output_type=output_type,
            tools_metadata=tools_metadata,
        )
        AgenToolRegistry.register(name, config)
        # 4. Create agent with AgenToolModel
        agent = Agent(model=AgenToolModel(name))
        # 5. Register manager tool
        tool_functions = tools
        manager = AgenToolManager(name, config, tool_functions)
        agent.tool(name='__agentool_manager__')(manager)
        # 6. Register actual tools
        for tool_func in tools:
            agent.tool(tool_func)
        # 7. Register with injector
        get_injector().register(name, agent)

        await agent.run('{"operation": "write", "key": "hand", "data": "made"}')
        assert (await agent.run('{"operation": "read", "key": "hand"}')).output == 'made'
        assert (await get_injector().run('storage', {'operation': 'read', 'key': 'hand'})).output == 'made'


def test_factory_metadata_extraction() -> None:
    def tool_func(ctx: RunContext[Any], key: str, limit: int = 3) -> str:
        """Read one key."""
        return key

    signature = inspect.signature(tool_func)
    expected = ToolMetadata(
        name=tool_func.__name__,
        description=inspect.getdoc(tool_func),
        is_async=inspect.iscoroutinefunction(tool_func),
        parameters=[p for p in signature.parameters if p != 'ctx'],  # agentool leaves out the RunContext
        parameter_types={'key': 'str', 'limit': 'int'},
        return_type='str',
    )
    assert extract_tool_metadata(tool_func) == expected


# --- Integration points ---------------------------------------------------------------------------


def test_model_registry_integration() -> None:
    """`register_agentool_models()` makes `models.infer_model('agentool:NAME')` an `AgenToolModel(NAME)`."""
    register_agentool_models()
    model = models.infer_model('agentool:storage')
    assert isinstance(model, AgenToolModel)
    assert model.name == 'storage'


async def test_agent_tool_registration() -> None:
    """The manager registered as the special tool with the decorator form, the tools normally."""
    config = AgenToolConfig(input_schema=StorageInput, routing_config=_storage_routing())
    AgenToolRegistry.register('storage', config)
    tools = [storage_read, storage_write]
    manager = AgenToolManager('storage', config, tools)
    agent = Agent(model=AgenToolModel('storage'))

    # Manager registered as special tool
    @agent.tool(name='__agentool_manager__')
    async def agentool_manager_tool(ctx: RunContext[Any], **kwargs: Any) -> Any:
        return await manager(ctx, **kwargs)

    # Actual tools registered normally
    for tool_func in tools:
        agent.tool(tool_func)

    await agent.run('{"operation": "write", "key": "x", "data": [1, 2]}')
    assert json.loads((await agent.run('{"operation": "read", "key": "x"}')).output) == [1, 2]


def test_schema_integration() -> None:
    """The guide patches a private pydantic-ai attribute; agentool needs no patch (a deliberate difference).

    `manager.get_tool_schema()` gives the schema the guide writes into the tool, and agents made by
    `create_agentool` already offer exactly the input schema to the model.
    """
    config = AgenToolConfig(input_schema=StorageInput, routing_config=_storage_routing())
    manager = AgenToolManager('storage', config, [storage_read, storage_write])
    schema = manager.get_tool_schema()
    patched = {
        'type': 'object',
        'properties': schema.get('properties', {}),
        'required': schema.get('required', []),
        'additionalProperties': False,
    }
    assert set(patched['properties']) == {'operation', 'key', 'data'}
    assert patched['required'] == ['operation', 'key']


class Result(BaseModel):
    value: int


def test_type_system_integration() -> None:
    """`infer_output_type`: the common BaseModel; dict and BaseModel are compatible."""

    async def as_model(ctx: RunContext[Any]) -> Result:
        return Result(value=1)

    async def as_dict(ctx: RunContext[Any]) -> dict[str, Any]:
        return {'value': 2}

    async def untyped(ctx: RunContext[Any]):
        return None

    metadata = [extract_tool_metadata(as_model), extract_tool_metadata(as_dict)]
    assert infer_output_type(metadata) is Result
    assert infer_output_type([extract_tool_metadata(as_model)]) is Result
    assert infer_output_type([*metadata, extract_tool_metadata(untyped)]) is None  # incompatible: untyped


# --- Design patterns ------------------------------------------------------------------------------


def test_synthetic_model_pattern() -> None:
    assert issubclass(AgenToolModel, Model)
    assert list(inspect.signature(AgenToolModel.request).parameters)[1:] == [
        'messages',
        'model_settings',
        'model_request_parameters',
    ]


def test_registry_pattern() -> None:
    """`_configs: Dict[str, AgenToolConfig]` and `cls._configs[name] = config`."""
    config = AgenToolConfig(input_schema=StorageInput, routing_config=_storage_routing())
    configs: dict[str, AgenToolConfig] = {'storage': config}
    for name, value in configs.items():
        AgenToolRegistry._configs[name] = value
    assert 'storage' in AgenToolRegistry._configs
    assert AgenToolRegistry.get('storage') is AgenToolRegistry._configs['storage']
    AgenToolRegistry._configs.clear()
    assert AgenToolRegistry.list_names() == []


async def test_dependency_injection_pattern() -> None:
    with use_injector() as injector:
        assert isinstance(injector, AgenToolInjector)
        create_calculator()
        result = await injector.run('calculator', {'operation': 'multiply', 'a': 2, 'b': 4})
        assert result.output == 8.0


def test_transform_pattern() -> None:
    operation_map = {
        'read': ('storage_read', lambda x: {'key': x.key}),
        'write': ('storage_write', lambda x: {'key': x.key, 'data': x.data}),
    }
    routing = RoutingConfig(operation_map=operation_map)
    write = routing.operation_map['write']
    assert write[0] == 'storage_write'
    assert write[1] is not None
    assert write[1](StorageInput(operation='write', key='k', data=1)) == {'key': 'k', 'data': 1}


# --- Extension points -----------------------------------------------------------------------------


class CustomOperationInput(BaseOperationInput):
    operation: Literal['custom_op1', 'custom_op2']
    custom_field: str
    optional_field: Optional[int] = None  # noqa: UP045


class CustomOutput(BaseModel):
    result: str
    metadata: Dict[str, Any]  # noqa: UP006
    timestamp: datetime


async def custom_tool(ctx: RunContext[Any], param1: str, param2: Optional[int] = None) -> CustomOutput:  # noqa: UP045
    # Implementation
    return CustomOutput(result=param1, metadata={'param2': param2}, timestamp=datetime(2024, 1, 1))


async def test_custom_schemas_outputs_and_tools() -> None:
    """Custom input schema, output type and tool: the output is validated and comes back typed."""
    routing = RoutingConfig(
        operation_map={
            'custom_op1': ('custom_tool', lambda x: {'param1': x.custom_field, 'param2': x.optional_field}),
            'custom_op2': ('custom_tool', lambda x: {'param1': x.custom_field.upper()}),
        }
    )
    agent = create_agentool('custom', CustomOperationInput, routing, [custom_tool])
    result = await agent.run('{"operation": "custom_op1", "custom_field": "hi", "optional_field": 3}')
    assert result.output == CustomOutput(result='hi', metadata={'param2': 3}, timestamp=datetime(2024, 1, 1))
    assert (await agent.run('{"operation": "custom_op2", "custom_field": "hi"}')).output.result == 'HI'


class MySchema(BaseModel):
    operation: Literal['go']
    raw_field: str
    a: int
    b: int


def process(value: str) -> str:
    return value.strip()


def compute(a: int, b: int) -> int:
    return a * b


def build_context(input_data: MySchema) -> Dict[str, Any]:  # noqa: UP006
    return {'operation': input_data.operation}


def complex_transform(input_data: MySchema) -> Dict[str, Any]:  # noqa: UP006
    # Complex transformation logic
    return {
        'processed_field': process(input_data.raw_field),
        'computed_value': compute(input_data.a, input_data.b),
        'context': build_context(input_data),
    }


async def test_custom_transformation_functions() -> None:
    async def use(
        ctx: RunContext[Any], processed_field: str, computed_value: int, context: dict[str, Any]
    ) -> dict[str, Any]:
        return {'field': processed_field, 'value': computed_value, 'context': context}

    agent = create_agentool('complex', MySchema, RoutingConfig(operation_map={'go': ('use', complex_transform)}), [use])
    result = await agent.run('{"operation": "go", "raw_field": "  x  ", "a": 6, "b": 7}')
    assert result.output == {'field': 'x', 'value': 42, 'context': {'operation': 'go'}}


@dataclass
class Tenant:
    name: str


class TenantInput(BaseOperationInput):
    operation: Literal['whoami']


async def whoami(ctx: RunContext[Tenant]) -> str:
    return ctx.deps.name


async def test_custom_dependency_injection() -> None:
    """A `CustomInjector` overriding `create_deps(agent_name)`: every surface given no deps uses it."""

    class CustomInjector(AgenToolInjector):
        def create_deps(self, agent_name: str) -> Optional[Any]:  # noqa: UP045
            # Custom dependency resolution logic
            return Tenant(name=f'tenant of {agent_name}')

    with use_injector(CustomInjector()) as injector:
        routing = RoutingConfig(operation_map={'whoami': 'whoami'})
        agent = create_agentool('who', TenantInput, routing, [whoami], deps_type=Tenant)
        assert (await injector.run('who', {'operation': 'whoami'})).output == 'tenant of who'
        assert await injector.call('who', {'operation': 'whoami'}) == 'tenant of who'
        assert (await agent.run('{"operation": "whoami"}')).output == 'tenant of who'


# --- Testing strategies ---------------------------------------------------------------------------


async def test_calculator_add() -> None:
    calculator = create_calculator()
    result = await calculator.run('{"operation": "add", "a": 5, "b": 3}')
    assert float(result.output) == 8.0


async def test_dependency_injection() -> None:
    """Integration testing: `injector.override(storage=mock_storage_agent)` around `injector.run`."""

    class ComplexInput(BaseOperationInput):
        operation: Literal['fetch']
        key: str

    async def fetch(ctx: RunContext[Any], key: str) -> Any:
        return (await get_injector().run('storage', {'operation': 'read', 'key': key})).output

    async def mock_read(ctx: RunContext[Any], key: str) -> Any:
        return f'mocked {key}'

    with use_injector():
        create_agentool('storage', StorageInput, _storage_routing(), [storage_read, storage_write])
        create_agentool('complex_agent', ComplexInput, RoutingConfig(operation_map={'fetch': 'fetch'}), [fetch])

        class ReadOnly(BaseOperationInput):
            operation: Literal['read']
            key: str

        mock_storage_agent = create_agentool(
            'mock_storage', ReadOnly, RoutingConfig(operation_map={'read': 'mock_read'}), [mock_read]
        )
        test_input = {'operation': 'fetch', 'key': 'k'}
        expected_output = 'mocked k'
        injector = get_injector()
        with injector.override(storage=mock_storage_agent):
            result = await injector.run('complex_agent', test_input)
            assert result.output == expected_output


def test_schema_validation() -> None:
    with pytest.raises(ValidationError):
        invalid_input = CalculatorInput(operation='invalid', a=1, b=2)  # noqa: F841  # pyright: ignore


def test_guide_type_names_are_importable_in_their_spelling() -> None:
    """`Type[BaseModel]`, `List[...]` and friends in the guide's dataclass are plain typing names."""
    fields: Dict[str, Any] = {'input_schema': Type[BaseModel], 'tags': List[str]}  # noqa: UP006
    assert set(fields) <= set(inspect.signature(AgenToolConfig).parameters)
