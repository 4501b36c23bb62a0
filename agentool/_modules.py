"""Importing the modules that register agentools, for `agentool.mcp.serve` and the `agentool` command."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Generator
from contextlib import contextmanager

from ._options import check_strings
from .errors import ConfigurationError


def import_modules(modules: object, *, option: str = 'modules') -> None:
    """Import each of `modules`; a failure, whatever it raised, is a `ConfigurationError`."""
    for module in check_strings(option, modules):
        try:
            importlib.import_module(module)
        except Exception as error:  # a module's own code may raise anything while it registers agentools
            cause = type(error).__name__
            raise ConfigurationError(
                f'cannot import module {module!r}: {cause}: {error}', module=module, cause=cause
            ) from error


@contextmanager
def without_working_directory() -> Generator[None]:
    """`sys.path` without the working directory inside the block: `httptools` is never `./httptools.py`."""
    here = os.getcwd()
    saved = list(sys.path)
    sys.path[:] = [entry for entry in saved if entry not in ('', '.', here)]
    try:
        yield
    finally:
        sys.path[:] = saved + [entry for entry in sys.path if entry not in saved]
