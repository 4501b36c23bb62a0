"""`BaseOperationInput`: the base class of agentool input schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ('BaseOperationInput',)


class BaseOperationInput(BaseModel):
    """Base input schema: an `operation` field plus the fields operations need.

    Subclasses narrow `operation` to a `Literal` of the operations they route, so the JSON schema
    shows an enum and pydantic rejects unknown operations. Unknown fields are rejected
    (`extra='forbid'`) so a typo never goes unnoticed, and so are infinite and NaN floats
    (`allow_inf_nan=False`): JSON has no such numbers, and a tool should not have to check for them.

    Example:
        ```python {test="skip"}
        class StorageInput(BaseOperationInput):
            operation: Literal['read', 'write']
            key: str
        ```
    """

    model_config = ConfigDict(extra='forbid', allow_inf_nan=False)

    if TYPE_CHECKING:
        # Typed `Any` for checkers so subclasses may narrow it to a `Literal` under pyright strict.
        operation: Any
    else:
        operation: str = Field(description='The operation to perform.')
