"""Hypothesis strategies from input schemas, used as property tests of the calculator and storage agentools."""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentool import get_registry
from agentool.errors import (
    ConfigurationError,
    InputValidationError,
    InvalidInputError,
    InvalidJSONError,
    NotAnObjectError,
    UnknownOperationError,
)
from agentool.testing.strategies import INVALID_KINDS, InvalidKind, invalid_inputs, valid_inputs
from examples.calculator import CalculatorInput, create_calculator
from tests.agentools import StorageInput


@pytest.fixture(autouse=True)
def calculator_registered() -> None:
    """The strategies look the agentool up before the first example runs, so register it first."""
    create_calculator(replace=True)


EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CALCULATOR_OPERATIONS = ['add', 'subtract', 'multiply', 'divide']
ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    'add': operator.add,
    'subtract': operator.sub,
    'multiply': operator.mul,
    'divide': operator.truediv,
}


@EXAMPLES
@given(valid_inputs('calculator'))
def test_every_valid_calculator_input_gives_the_arithmetic_result(data: dict[str, Any]) -> None:
    calculator = create_calculator(replace=True)
    try:
        expected = ARITHMETIC[data['operation']](data['a'], data['b'])
    except ZeroDivisionError:  # documented: the tool's own exception propagates
        with pytest.raises(ZeroDivisionError):
            calculator.run_sync(json.dumps(data))
        return
    assert calculator.run_sync(json.dumps(data)).output == expected


@EXAMPLES
@given(invalid_inputs('calculator'))
def test_every_invalid_calculator_input_raises_a_typed_invalid_input_error(prompt: str) -> None:
    calculator = create_calculator(replace=True)
    with pytest.raises(InvalidInputError) as caught:
        calculator.run_sync(prompt)
    assert caught.value.agentool == 'calculator'


KIND_ERRORS: list[tuple[InvalidKind, type[InvalidInputError]]] = [
    ('not_json', InvalidJSONError),
    ('not_an_object', NotAnObjectError),
    ('unknown_operation', UnknownOperationError),
    ('missing_field', InputValidationError),
    ('wrong_type', InvalidInputError),
    ('unknown_field', InputValidationError),
]


@pytest.mark.parametrize(('kind', 'error'), KIND_ERRORS)
def test_each_invalid_kind_gives_its_error(kind: InvalidKind, error: type[InvalidInputError]) -> None:
    manager = get_registry().get_manager('calculator')

    @EXAMPLES
    @given(invalid_inputs('calculator', kinds=[kind]))
    def check(prompt: str) -> None:
        with pytest.raises(error):
            manager.validate_json(prompt)

    check()


@EXAMPLES
@given(valid_inputs(CalculatorInput, 'divide', fields={'b': st.floats(1, 10)}))
def test_one_operation_and_field_strategies(data: dict[str, Any]) -> None:
    assert data['operation'] == 'divide'
    assert 1 <= data['b'] <= 10


@EXAMPLES
@given(valid_inputs(StorageInput), invalid_inputs(StorageInput))
def test_schemas_with_optional_and_untyped_fields(valid: dict[str, Any], invalid: str) -> None:
    assert StorageInput.model_validate_json(json.dumps(valid)).operation in {'read', 'write', 'list', 'delete'}
    with pytest.raises(ValueError, match='validation error'):
        StorageInput.model_validate_json(invalid)


@pytest.mark.parametrize(
    ('kinds', 'message'),
    [
        (['bogus'], 'kinds must be a non-empty selection of not_json, not_an_object, '),
        ([], 'kinds must be a non-empty selection of not_json, '),
        (['not_json', 5], 'kinds must be a string or a list of strings'),
        (5, 'kinds must be a string or a list of strings'),
    ],
)
def test_bad_kinds_are_a_configuration_error_listing_the_valid_ones(kinds: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        invalid_inputs(CalculatorInput, kinds=kinds)
    assert caught.value.details['option'] == 'kinds'
    assert caught.value.details['value'] == repr(kinds)


def test_one_kind_may_be_given_alone() -> None:
    invalid_inputs('calculator', kinds='not_json')  # pyright: ignore[reportArgumentType]


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="has no operation 'power'") as caught:
        given(valid_inputs(CalculatorInput, 'power'))(lambda data: None)()
    assert caught.value.details['known'] == CALCULATOR_OPERATIONS

    with pytest.raises(ConfigurationError, match=r"has no operation 'pow' \(known: add, subtract") as caught:
        given(valid_inputs('calculator', 'pow'))(lambda data: None)()
    assert caught.value.details == {'option': 'operation', 'value': "'pow'", 'known': CALCULATOR_OPERATIONS}
    assert set(INVALID_KINDS) == {kind for kind, _ in KIND_ERRORS}


@pytest.mark.parametrize(
    ('build', 'option'),
    [
        (lambda: valid_inputs(cast(Any, 5)), 'agentool'),
        (lambda: invalid_inputs(cast(Any, 5)), 'agentool'),
        (lambda: valid_inputs('calculator', fields=cast(Any, 5)), 'fields'),
        (lambda: valid_inputs('calculator', fields=cast(Any, {'a': 5})), 'fields'),
        (lambda: valid_inputs('calculator', fields={'bogus': st.just(1)}), 'fields'),
        (lambda: valid_inputs('calculator', registry=cast(Any, 5)), 'registry'),
        (lambda: invalid_inputs('calculator', registry=cast(Any, 5)), 'registry'),
    ],
)
def test_strategies_refuse_bad_arguments_with_a_configuration_error(build: Any, option: str) -> None:
    with pytest.raises(ConfigurationError) as caught:  # on building the strategy or on drawing from it
        settings(max_examples=1, database=None)(given(build())(lambda value: None))()
    assert caught.value.details['option'] == option


def test_strategies_look_the_agentool_up_when_drawn() -> None:
    strategy = valid_inputs('calculator', 'add')  # built before the agentool exists
    create_calculator(replace=True)
    assert get_registry().list_names() == ['calculator']

    @settings(max_examples=5, database=None)
    @given(strategy)
    def drawing(value: dict[str, Any]) -> None:
        assert value['operation'] == 'add'

    drawing()
