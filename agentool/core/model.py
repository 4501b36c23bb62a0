"""`AgenToolModel`: a synthetic model that turns a JSON prompt into one typed tool call.

Bad input raises a typed `InvalidInputError`, with no retry loop. A plain `Agent('agentool:NAME')`
has no manager tool: the model runs the operation itself.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel
from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from .._answering import TOOL_CALLING_PROFILE, AnsweringModel
from .._options import check_instance, check_name
from ..errors import ConfigurationError, InvalidInputError, MissingDepsError
from .manager import MANAGER_TOOL_NAME, AgenToolManager
from .operation import Policy, run_operation
from .output import output_response
from .registry import AgenToolRegistry, get_registry
from .request import ToolRaised, call_args, failed_error, output_retry_error, retried_error

__all__ = ('AgenToolModel', 'DETERMINISTIC_RUN')

DETERMINISTIC_RUN = Policy(surface='agent', typed_errors=True)
"""How a run without the manager tool (plain model form, lean runs) runs its operation: typed errors."""


class AgenToolModel(AnsweringModel):
    """A deterministic model for agentool `name` (read from `registry`, by default the one in effect
    at request time); `settings` are accepted for interface parity and ignored."""

    def __init__(
        self, name: str, *, registry: AgenToolRegistry | None = None, settings: ModelSettings | None = None
    ) -> None:
        check_instance('registry', registry, AgenToolRegistry, optional=True)
        super().__init__(settings=settings, profile=TOOL_CALLING_PROFILE)
        self._name = check_name(name)  # a bad name would only fail at the first request, in pydantic-ai
        self._registry = registry
        self.output_parameters: ModelRequestParameters | None = None
        """The request parameters of this model's latest final answer, which a lean run answers in."""

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def name(self) -> str:
        """The agentool's name, as the architecture guide reads it (`AgenToolRegistry.get(self.name)`)."""
        return self._name

    @property
    def system(self) -> str:
        """The provider name reported in responses and telemetry."""
        return 'agentool'

    @property
    def registry(self) -> AgenToolRegistry:
        return get_registry() if self._registry is None else self._registry

    async def _respond(self, messages: list[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        if not messages:
            raise InvalidInputError(f'agentool {self._name!r}: no input provided (no messages)', agentool=self._name)
        last = messages[-1]
        assert isinstance(last, ModelRequest)  # the agent graph always ends with a request
        call_id = f'agentool_{self._name}_{sum(isinstance(m, ModelResponse) for m in messages)}'
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.outcome == 'retried':
                output_tool = next((t for t in params.output_tools if t.name == part.tool_name), None)
                content = cast(Any, part.content)
                if output_tool is not None and isinstance(content, list):
                    errors = cast(list[Any], content)
                    raise output_retry_error(self._name, part.tool_name, errors, output_tool.outer_typed_dict_key)
                raise retried_error(self._name, part.tool_name, part.model_response_str())
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == MANAGER_TOOL_NAME:
                if part.outcome != 'success':  # failed, denied or interrupted: never an output
                    raise failed_error(self._name, part.model_response_str(wrap_if_error=False), part.outcome)
                if isinstance(part.content, ToolRaised):
                    raise part.content.error  # the tool's own exception, unchanged
                return self._final(part.content, params, call_id)
        prompts = [part for part in last.parts if isinstance(part, UserPromptPart)]
        if not prompts:
            raise InvalidInputError(f'agentool {self._name!r}: the request has no user prompt', agentool=self._name)
        prompt = _text(prompts[-1], self._name)
        if last.run_id is not None and any(
            isinstance(m, ModelResponse) and m.run_id == last.run_id for m in messages[:-1]
        ):
            # A user-voice part after our own answer in the same run is pydantic-ai's retry feedback.
            raise retried_error(self._name, None, prompt)
        has_manager_tool = any(tool.name == MANAGER_TOOL_NAME for tool in params.function_tools)
        args: str | dict[str, Any] = prompt
        try:
            manager = self.registry.get_manager(self._name)
        except ConfigurationError:
            if not has_manager_tool:
                raise
            # An agent assembled by hand, as the guide shows: its own manager tool (built with the
            # tool functions) routes, so a configuration without tools is enough here.
            AgenToolManager(self._name, self.registry.require(self._name)).validate_json(prompt, routed=False)
        else:
            validated = manager.validate_json(prompt)
            if not has_manager_tool:
                return self._final(await self._run_plain(manager, validated, prompt), params, call_id)
            args = call_args(prompt, validated)
        return ModelResponse(parts=[ToolCallPart(MANAGER_TOOL_NAME, args, tool_call_id=call_id)], model_name=self._name)

    def _final(self, value: Any, params: ModelRequestParameters, call_id: str) -> ModelResponse:
        self.output_parameters = params
        output_type = self.registry.require(self._name).output_type
        return output_response(
            value, params, model_name=self._name, agentool=self._name, call_id=call_id, output_type=output_type
        )

    async def _run_plain(self, manager: AgenToolManager, validated: BaseModel, prompt: str) -> Any:
        ctx = RunContext[Any](deps=None, model=self, usage=RunUsage(), prompt=prompt)
        try:
            return await run_operation(DETERMINISTIC_RUN, manager, validated, ctx, tracer=ctx.tracer)
        except MissingDepsError as error:
            if error.details.get('agentool') != self._name:
                raise
            raise MissingDepsError(
                f'{error.message}. A plain Agent("agentool:{self._name}") cannot receive deps=: to pass '
                f'them, use Agent("agentool:{self._name}", capabilities=[AgenToolCapability({self._name!r})]) or '
                'the agent create_agentool returned',
                **error.details,
            ) from None


def _text(part: UserPromptPart, agentool: str) -> str:
    if isinstance(part.content, str):
        return part.content
    if all(isinstance(item, str) for item in part.content):
        return ''.join(str(item) for item in part.content)
    raise InvalidInputError(
        f'agentool {agentool!r} takes a JSON text prompt; the prompt contains non-text content',
        agentool=agentool,
    )
