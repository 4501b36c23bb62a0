"""Deterministic test doubles for pydantic-ai agents, record and replay, and a pytest plugin.

`AgentDouble` plays `Script`s in place of any agent's model; `CassetteModel` records a model's
exchanges once and replays them offline; `trajectory(...)` reads what any run did. Submodules:
`scrub`, `strategies` (hypothesis), `plugin` (pytest), `evals` (pydantic-evals).
"""

from __future__ import annotations

from .cassette import (
    Cassette,
    CassetteInfo,
    Exchange,
    RecordedCall,
    RecordedRun,
    RecordedToolCall,
    Recording,
    RecordMode,
    canonical_args,
)
from .cassette_model import CassetteModel, Redactor
from .cassette_tools import CassetteTools
from .diff import RunDiff, diff_runs
from .double import AgentDouble
from .log import CallLog, CallRecord, Expected, RequestRecord
from .recorder import Recorder
from .replay import Replay
from .script import Call, Matcher, Operation, Output, OutputFrom, Predicate, Prompt, Regex, Script, ScriptRun, Step
from .stand_in import DoubledAgent, use_doubles
from .toolsets import CassetteToolset, ToolsetDouble
from .trajectory import Trajectory, TrajectoryStep, trajectory

__all__ = (
    'AgentDouble',
    'Call',
    'Cassette',
    'CassetteInfo',
    'CassetteModel',
    'CassetteTools',
    'CassetteToolset',
    'Exchange',
    'RecordMode',
    'Redactor',
    'CallLog',
    'CallRecord',
    'DoubledAgent',
    'Expected',
    'Matcher',
    'Operation',
    'Output',
    'OutputFrom',
    'Predicate',
    'Prompt',
    'Regex',
    'RecordedCall',
    'RecordedRun',
    'RecordedToolCall',
    'Recorder',
    'Recording',
    'Replay',
    'RequestRecord',
    'Script',
    'RunDiff',
    'ScriptRun',
    'Step',
    'ToolsetDouble',
    'Trajectory',
    'TrajectoryStep',
    'canonical_args',
    'diff_runs',
    'trajectory',
    'use_doubles',
)
