"""Pydantic-ai `Model`s that answer each request in one step, streamed or not.

A `OneStepModel` writes only `_answer`, an `AnsweringModel` only `_respond`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, ClassVar, cast

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponseStreamEvent
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings

from .errors import InvalidInputError

TOOL_CALLING_PROFILE = ModelProfile(
    supports_tools=True,
    supports_json_schema_output=True,
    supports_json_object_output=True,
    default_structured_output_mode='tool',
)
"""What both models support: tool calls, and every structured output mode (tool output by default)."""


Request = tuple[list[ModelMessage], ModelSettings | None, ModelRequestParameters]
Answer = tuple[ModelResponse, 'list[ModelResponseStreamEvent] | bool', ModelRequestParameters]
"""A response, what a stream of it replays (`replay_events`), and the parameters it answered."""


class OneStepModel(Model):
    """A model whose answer to a request is complete at once (`_answer`); a stream replays it."""

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        return (await self._answer((messages, model_settings, model_request_parameters), None, False))[0]

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        request = (messages, model_settings, model_request_parameters)
        response, events, params = await self._answer(request, run_context, True)
        yield CompletedStreamedResponse(response, model_request_parameters=params, replay_events=events)

    @abstractmethod
    async def _answer(self, request: Request, run_context: RunContext[Any] | None, stream: bool) -> Answer:
        """The answer to `request`, for `request_stream` when `stream`."""


class AnsweringModel(OneStepModel):
    """A model whose response is computed at once by `_respond`."""

    deterministic: ClassVar[bool] = True
    """Whether the same request always gets the same answer, so asking again (a retry) is futile."""

    async def _answer(self, request: Request, run_context: RunContext[Any] | None, stream: bool) -> Answer:
        messages, settings, params = request
        if not isinstance(cast(object, params), ModelRequestParameters):  # say a dict: a typed error
            given = type(params).__name__
            raise InvalidInputError(
                f'{type(self).__name__} {self.model_name!r}: model_request_parameters must be a '
                f'pydantic_ai.models.ModelRequestParameters, got {given}; agent.run builds it',
                model=self.model_name,
                python_type=given,
            )
        prepared = self.prepare_request(settings, params)[1]
        return await self._respond(messages, prepared), True, prepared

    @abstractmethod
    async def _respond(self, messages: list[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
        """The response to `messages`, with the prepared request parameters."""


def is_deterministic(model: object) -> bool:
    """Whether `model` (unwrapped: instrumentation wraps it) answers by itself, so no one can retry a call."""
    while isinstance(model, WrapperModel):
        model = model.wrapped
    return isinstance(model, AnsweringModel) and model.deterministic
