"""Deterministic test doubles for pydantic-ai agents, record and replay, and a pytest plugin.

- `AgentDouble` stands in for any agent's model and plays `Script`s; drift from the real agent
  (tools, arguments, output type) fails the test with a `DriftError` naming the tool and field.
- `use_doubles` / `DoubledAgent` put doubles in place of agents reached by name through the injector.
- One recording concept, the `Cassette` file. `CassetteModel` wraps any pydantic-ai model: it
  records what the model was sent and answered once, then replays it offline (no network, no
  key), streaming included; `CassetteTools` keeps tool results in the same cassette, so a replay
  runs without the tools. `Recorder` records runs at the tool level instead (with any model, as
  a capability); `Replay` serves any cassette back, model and tools (and reads the older
  `"agentool-recording"` files; `Recording` is the cassette's former name).
- `Trajectory.of(...)` / `trajectory(...)` read what any run did (a pydantic-ai result or its
  messages, a replay, a cassette, a double), with the call log's assertions plus the number of
  model requests and the output; `diff_runs` names what changed between two of them.
- `agentool.testing.scrub` replaces secrets before a cassette is written (on by default).
- `agentool.testing.strategies` has hypothesis strategies built from input schemas (it needs
  the `hypothesis` package, the `testing` extra).
- `agentool.testing.plugin` is the pytest plugin, loaded through its entry point.
- `agentool.testing.evals` scores recorded runs with pydantic-evals (span trees by replay,
  datasets of cassettes, frozen-tools experiments, the `Drift` evaluator; the `evals` extra).

This package sits above everything else in agentool except the CLI: it may import the core, the
injector and the bridges; nothing in the library imports it. A new test helper goes here.
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
