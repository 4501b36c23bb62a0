"""`Replay`: serve a cassette back, so a test runs offline what a real model and real tools once did."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import cast

from .._options import refuse
from ..errors import ConfigurationError
from .cassette import Cassette
from .cassette_model import CassetteModel, runs_double
from .cassette_tools import CassetteTools
from .double import AgentDouble

__all__ = ('Replay',)


@dataclass(init=False)
class Replay(CassetteTools):
    """Serves the cassette at `source` (a path, or a `Cassette` in memory) with no model and no tools.

    `model` is its `CassetteModel` (for a cassette of runs, an `AgentDouble` named `name` plays
    them); a call that was not recorded fails with an `UnrecordedCallError`.
    """

    recording: Cassette
    source: str  # where the cassette came from, for messages

    def __init__(self, source: Cassette | str | os.PathLike[str], *, name: str = 'replay') -> None:
        __tracebackhide__ = True  # cassette errors point at the test, not here
        if not isinstance(cast(object, source), Cassette | str | os.PathLike):
            raise refuse('source', 'a cassette file path or a Cassette', source, what='Replay(source=...)')
        model = CassetteModel(None, cassette=source)
        self.recording = model.cassette
        self.source = 'the cassette' if isinstance(source, Cassette) else repr(os.fspath(source))
        if not (self.recording.exchanges or self.recording.runs or self.recording.tool_calls):
            raise ConfigurationError(f'{self.source} holds nothing to replay', option='source', value=self.source)
        if isinstance(model.wrapped, AgentDouble) and name != model.wrapped.name:
            model.wrapped = runs_double(self.recording.runs, name)
        super().__init__(model)
