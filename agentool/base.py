"""`BaseOperationInput`: the base class of agentool input schemas."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, cast, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, model_validator
from pydantic_core import InitErrorDetails

__all__ = ('BaseOperationInput', 'AllowInfNan')


class AllowInfNan:
    """Marks a free-form field that may hold infinite and NaN floats: `Annotated[Any, AllowInfNan()]`."""


class BaseOperationInput(BaseModel):
    """Base input schema: an `operation` field plus the fields operations need.

    Subclasses narrow `operation` to a `Literal` of the operations they route. Unknown fields are
    rejected (`extra='forbid'`), and so are infinite and NaN floats, which JSON has no number for,
    also inside free-form fields (`Any`, `JsonValue`) unless marked `Annotated[Any, AllowInfNan()]`.
    """

    model_config = ConfigDict(extra='forbid', allow_inf_nan=False)
    __agentool_free_fields__: ClassVar[tuple[str, ...]] = ()
    """The fields whose values are free-form JSON, where a non-finite float must be looked for."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.__agentool_free_fields__ = tuple(
            name
            for name, info in cls.model_fields.items()
            if _free_form(info.annotation) and not any(isinstance(m, AllowInfNan) for m in info.metadata)
        )

    @model_validator(mode='after')
    def _finite_numbers_only(self) -> Any:
        for name in self.__agentool_free_fields__:  # empty for most schemas: one attribute read
            if (where := _non_finite(getattr(self, name))) is not None:
                path, value = where
                error = InitErrorDetails(type='finite_number', loc=(name, *path), input=str(value))
                raise ValidationError.from_exception_data(type(self).__name__, [error])
        return self

    if TYPE_CHECKING:
        # Typed `Any` for checkers so subclasses may narrow it to a `Literal` under pyright strict.
        operation: Any
    else:
        operation: str = Field(description='The operation to perform.')


def _free_form(annotation: Any) -> bool:
    """Whether a field of this type takes any JSON value somewhere inside (where pydantic allows NaN)."""
    if annotation is Any or annotation is object or annotation is JsonValue:
        return True
    if get_origin(annotation) is Annotated:
        args = get_args(annotation)
        return not any(isinstance(m, AllowInfNan) for m in args[1:]) and _free_form(args[0])
    return any(_free_form(arg) for arg in get_args(annotation) if arg is not Ellipsis)


def _non_finite(value: Any) -> tuple[tuple[str | int, ...], float] | None:
    """The path to the first infinite or NaN float inside `value`, and that float, or `None` (iterative:
    deep input cannot overflow)."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if type(item) is float and not math.isfinite(item):
            return path, item
        if isinstance(item, dict):
            stack.extend(((*path, key), inner) for key, inner in cast('dict[str, Any]', item).items())
        elif isinstance(item, list | tuple):
            stack.extend(((*path, index), inner) for index, inner in enumerate(cast('list[Any]', item)))
    return None
