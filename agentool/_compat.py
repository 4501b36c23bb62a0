"""The supported pydantic-ai releases, and the one place where their differences may live.

The floor, 2.60.0, is the first release where a retried tool call comes back as
`ToolReturnPart(outcome='retried')`. A shim for a changed seam goes here, its canary in
tests/test_compat.py. Importing this module checks the installed release.
"""

from __future__ import annotations

import re

import pydantic_ai

from .errors import PydanticAIVersionError

MINIMUM = (2, 60, 0)
"""The lowest supported `pydantic-ai-slim` release (pyproject.toml declares the same bound)."""

BELOW = (3, 0, 0)
"""The first release no longer supported: the next major version."""

SUPPORTED = f'pydantic-ai-slim>={".".join(map(str, MINIMUM))},<{BELOW[0]}'
"""The supported range, as the requirement pyproject.toml declares."""

PYDANTIC_AI_VERSION: str = pydantic_ai.__version__
"""The installed release, as pydantic-ai reports it."""


def parse_version(version: str) -> tuple[int, int, int] | None:
    """`(major, minor, patch)` of a release string (`'2.68.0'`, `'2.69.0b1'`, `'2.69.1.dev3+g0'`), or None."""
    found = re.match(r'(\d+)\.(\d+)(?:\.(\d+))?', version)
    if found is None:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


_PRE_RELEASE = re.compile(r'\d+\.\d+(?:\.\d+)?[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview|dev)', re.IGNORECASE)
"""A pre-release or dev release (`2.60.0b1`, `2.60.0rc1`, `2.60.0.dev3`) of its numbers."""


def check_pydantic_ai(version: str = PYDANTIC_AI_VERSION) -> None:
    """Raise `PydanticAIVersionError` unless `version` is within `SUPPORTED` (`2.60.0rc1` is not)."""
    parsed = parse_version(version)
    if parsed is None or not MINIMUM <= parsed < BELOW or (parsed == MINIMUM and _PRE_RELEASE.match(version)):
        raise PydanticAIVersionError(
            f'agentool needs {SUPPORTED}, but pydantic-ai {version} is installed: run `pip install "{SUPPORTED}"`',
            installed=version,
            supported=SUPPORTED,
        )


check_pydantic_ai()
