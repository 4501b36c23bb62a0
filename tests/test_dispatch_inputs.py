"""Dispatch on inputs JSON cannot carry or the agentool refuses before parsing.

A prompt may hold a lone surrogate (text decoded with `surrogateescape`, a broken client), and a
rule may build an input pydantic cannot serialise or one over the agentool's `max_input_bytes`.
A claimed turn must end as the agentool itself ends for that input (its typed error, with
`details['rule']`, or the model when the rule falls through), and `JsonRule` declines text that
cannot be JSON, as it declines any other text that is not.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentool import (
    BaseOperationInput,
    InputTooLargeError,
    InputValidationError,
    InvalidInputError,
    RoutingConfig,
    create_agentool,
    get_injector,
)
from agentool.dispatch import CommandRule, DispatchCapability, DispatchRule, JsonRule, PredicateRule
from tests.agentools import ping, say

LONE = '\ud800'
"""A lone surrogate: a valid Python `str` character that UTF-8, hence JSON text, cannot hold."""


class NoteInput(BaseOperationInput):
    operation: Literal['say', 'ping']
    text: str | None = None


@pytest.fixture(autouse=True)
def notes() -> None:
    routes = RoutingConfig(operation_map={'say': 'say', 'ping': 'ping'})
    create_agentool('notes', NoteInput, routes, [say, ping], max_input_bytes=100)


class Model:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls += 1
        return ModelResponse(parts=[TextPart('model')])


def make(*rules: DispatchRule) -> tuple[Agent[None, str], Model, DispatchCapability]:
    model = Model()
    capability = DispatchCapability(list(rules))
    return Agent(FunctionModel(model), output_type=str, capabilities=[capability]), model, capability


async def refusal(input: Any) -> InvalidInputError:
    """The typed error the agentool itself gives for `input`, through the injector."""
    with pytest.raises(InvalidInputError) as caught:
        await get_injector().call('notes', input)
    return caught.value


@pytest.mark.parametrize('rule', [JsonRule(agentool='notes'), JsonRule()], ids=['named', 'by-operation'])
async def test_a_json_rule_declines_a_prompt_with_a_lone_surrogate(rule: JsonRule) -> None:
    # No JSON text holds a lone surrogate: like any other text that is not JSON, the model gets it.
    agent, model, capability = make(rule)
    result = await agent.run(f'{{"operation": "say", "text": "{LONE}"}}')
    assert result.output == 'model'
    assert model.calls == 1
    assert (capability.counts.dispatched, capability.counts.sent_to_model, capability.counts.errors) == (0, 1, 0)


async def test_a_predicate_rule_passing_such_a_prompt_on_gets_the_agentools_error() -> None:
    prompt = f'{{"operation": "say", "text": "{LONE}"}}'
    agent, model, _ = make(PredicateRule(name='all', agentool='notes', when=lambda r: True))
    expected = await refusal(prompt)
    with pytest.raises(InputValidationError) as caught:
        await agent.run(prompt)
    assert type(caught.value) is type(expected)
    assert caught.value.message == expected.message
    assert caught.value.details == {**expected.details, 'rule': 'all'}
    assert model.calls == 0


SAY = r'/say (?P<text>.*)'


async def test_a_command_capturing_a_lone_surrogate_gets_the_agentools_error_naming_the_rule() -> None:
    agent, model, capability = make(CommandRule(name='say', pattern=SAY, agentool='notes', operation='say'))
    expected = await refusal({'text': LONE, 'operation': 'say'})
    with pytest.raises(InvalidInputError) as caught:
        await agent.run(f'/say {LONE}')
    assert type(caught.value) is type(expected)
    assert caught.value.message == expected.message
    assert caught.value.details == {**expected.details, 'rule': 'say'}
    assert (model.calls, capability.counts.errors) == (0, 1)


async def test_a_command_capturing_a_lone_surrogate_falls_through_when_the_rule_says_so() -> None:
    rule = CommandRule(pattern=SAY, agentool='notes', operation='say', on_invalid='fall_through')
    agent, model, capability = make(rule)
    assert (await agent.run(f'/say {LONE}')).output == 'model'
    assert (model.calls, capability.counts.fell_through) == (1, 1)


@pytest.mark.parametrize('on_invalid', ['raise', 'fall_through'])
async def test_an_input_a_rule_builds_over_max_input_bytes_is_invalid_input(on_invalid: Any) -> None:
    # The size is the agentool's first check on every path; a dict built by a rule is no exception.
    # The prompt itself is within the limit (a longer one the pattern never reads: it is declined),
    # the JSON input built from it is not.
    agent, model, capability = make(
        CommandRule(name='say', pattern=SAY, agentool='notes', operation='say', on_invalid=on_invalid)
    )
    long = 'y' * 90
    if on_invalid == 'raise':
        expected = await refusal({'text': long, 'operation': 'say'})
        with pytest.raises(InputTooLargeError) as caught:
            await agent.run(f'/say {long}')
        assert caught.value.message == expected.message
        assert caught.value.details == {**expected.details, 'rule': 'say'}
    else:
        assert (await agent.run(f'/say {long}')).output == 'model'
        assert capability.counts.fell_through == 1
    assert model.calls == (on_invalid == 'fall_through')
    assert (await agent.run('/say short')).output == 'short'


async def test_a_model_a_rule_builds_is_checked_like_any_other_input() -> None:
    # `say` needs `text`, which the schema leaves optional: a model instance without it is refused
    # as the injector refuses it, not passed on unchecked.
    built = NoteInput(operation='say')
    rule = PredicateRule(name='model', agentool='notes', when=lambda r: True, build=lambda r: built)
    agent, model, _ = make(rule)
    expected = await refusal(built)
    with pytest.raises(InputValidationError) as caught:
        await agent.run('anything')
    assert caught.value.message == expected.message
    assert caught.value.details['rule'] == 'model'
    assert model.calls == 0
