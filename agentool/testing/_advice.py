"""What a cassette error tells the user to type to record: the pytest command for a model the
plugin's fixture made (its mode comes from the command line), else the mode."""

from __future__ import annotations

import shlex
from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from .._bounds import clip

_OPTION = '--agentool-record-mode'


@dataclass(frozen=True, kw_only=True)
class RecordAdvice:
    """How errors say to record: a `CassetteModel` mode, or the pytest command for one test."""

    test: str | None = None
    """The pytest node id of the test whose fixture made the model; `None` in code."""

    def record(self) -> str:
        """How to record a cassette that does not exist yet."""
        return self._say('CassetteModel in mode "once" or "all", or Recorder', 'once')

    def fill(self) -> str:
        """How to record into a cassette that exists but holds nothing to answer with."""
        return self._say('mode "once" or "all"', 'all')

    def rerecord(self, *, keep: bool = True) -> str:
        """How to record again; `keep`: recording only what no longer matches (`new_episodes`) also does."""
        if self.test is None:
            return 'mode "all" (or "new_episodes")' if keep else 'mode "all"'
        return self._say('', 'all') + (f' (or {_OPTION}=new_episodes)' if keep else '')

    def real_model(self) -> str:
        """Where the real model goes, for a recording mode given none."""
        if self.test is None:
            return 'pass the real model as its first argument'
        return 'pass the real model to the agentool_cassette fixture: agentool_cassette(model)'

    def _say(self, in_code: str, mode: str) -> str:
        """`in_code` for a model made in code; in pytest, the command recording this test in `mode`."""
        if self.test is None:
            return in_code
        test = f'{shlex.quote(clip(self.test, 300))} ' if self.test else ''
        return f'pytest {test}{_OPTION}={mode}'


_IN_CODE = RecordAdvice()
ADVICE: ContextVar[RecordAdvice] = ContextVar('agentool_record_advice', default=_IN_CODE)
"""The advice for a model made now: the plugin's while its fixture makes one, else the mode's."""


@contextmanager
def advising(advice: RecordAdvice) -> Generator[RecordAdvice]:
    """Models made inside take `advice` (the pytest plugin's fixture, for the models it makes)."""
    token = ADVICE.set(advice)
    try:
        yield advice
    finally:
        ADVICE.reset(token)
