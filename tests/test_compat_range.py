"""The supported pydantic-ai range: which releases the import check accepts, and pyproject declaring that range."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from agentool import PydanticAIVersionError
from agentool._compat import SUPPORTED, check_pydantic_ai
from tests.agentools import run_python

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('version', ['2.60.0a1', '2.60.0b1', '2.60.0rc1', '2.60.0.dev3', '2.60.0rc1.dev2+g0'])
def test_a_pre_release_of_the_floor_is_below_the_declared_range(version: str) -> None:
    # pyproject.toml declares `>=2.60.0`, which a pre-release or dev release of 2.60.0 does not satisfy.
    with pytest.raises(PydanticAIVersionError) as caught:
        check_pydantic_ai(version)
    assert caught.value.details == {'installed': version, 'supported': SUPPORTED}


@pytest.mark.parametrize('version', ['2.60.0', '2.60.0.post1', '2.60.1b1', '2.61.0.dev0', '2.99.99rc1'])
def test_releases_inside_the_declared_range_pass(version: str) -> None:
    check_pydantic_ai(version)


def test_import_agentool_on_an_unsupported_release_is_the_typed_error() -> None:
    script = (
        'import pydantic_ai\n'
        "pydantic_ai.__version__ = '2.59.3'\n"
        'try:\n'
        '    import agentool\n'
        'except ImportError as error:\n'
        '    print(type(error).__name__, error.details)\n'
    )
    out = run_python(script)
    assert out.strip() == ("PydanticAIVersionError {'installed': '2.59.3', 'supported': 'pydantic-ai-slim>=2.60.0,<3'}")


def test_every_pydantic_ai_requirement_in_pyproject_declares_the_supported_range() -> None:
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    requirements = [
        *project['dependencies'],
        *(r for extra in project['optional-dependencies'].values() for r in extra),
    ]
    ranges = {
        re.sub(r'\[[^\]]*\]', '', re.sub(r'\s', '', requirement))
        for requirement in requirements
        if re.match(r'pydantic-ai\b', requirement)
    }
    assert ranges == {SUPPORTED}
