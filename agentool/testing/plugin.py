"""The pytest plugin of `agentool.testing`, loaded through the `pytest11` entry point.

Everything is opt-in; agentool is imported only when a fixture runs, so a broken import fails the
tests that use it rather than pytest's start.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from .._bounds import quote

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from ..core.injector import AgenToolInjector
    from ..core.registry import AgenToolRegistry
    from .cassette import RecordMode
    from .cassette_model import CassetteModel, Redactor

__all__ = (
    'pytest_addoption',
    'agentool_registry',
    'agentool_injector',
    'agentool_no_model_requests',
    'agentool_recording_path',
    'agentool_record_mode',
    'agentool_cassette_path',
    'agentool_cassette',
    'CassetteFactory',
)

_ISOLATE = 'agentool_isolate'
_BLOCK = 'agentool_block_model_requests'
_MODE = 'agentool_record_mode'
_MODES = ('once', 'none', 'new_episodes', 'all')
_MARKER = 'agentool_cassette'
_ALLOW_UNUSED = 'agentool_allow_unused_exchanges'


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(_ISOLATE, type='bool', default=False, help='agentool: a fresh registry and injector for every test')
    parser.addini(_BLOCK, type='bool', default=False, help='agentool: ALLOW_MODEL_REQUESTS = False for every test')
    parser.addini(_MODE, default='none', help='agentool: cassette record mode (once, none, new_episodes, all)')
    parser.addini(
        _ALLOW_UNUSED, type='bool', default=False, help='agentool: a replay may leave recorded exchanges unused'
    )
    parser.addoption(
        '--agentool-record-mode',
        dest=_MODE,
        choices=_MODES,
        default=None,
        help='agentool: cassette record mode for every test (overrides markers and the ini option)',
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        'markers',
        f'{_MARKER}(mode=None, name=None, allow_unused=None): agentool cassette record mode, file name, '
        'and whether a replay may leave exchanges unused',
    )


@pytest.fixture
def agentool_registry() -> Iterator[AgenToolRegistry]:
    """A fresh, empty registry in effect for the test; the previous one is back afterwards."""
    from ..core.registry import use_registry

    with use_registry() as registry:
        yield registry


@pytest.fixture
def agentool_injector(agentool_registry: AgenToolRegistry) -> Iterator[AgenToolInjector]:
    """A fresh injector in effect for the test, bound to the test's fresh registry."""
    from ..core.injector import AgenToolInjector, use_injector

    with use_injector(AgenToolInjector(registry=agentool_registry)) as injector:
        yield injector


@pytest.fixture
def agentool_no_model_requests() -> Iterator[None]:
    """`pydantic_ai.models.ALLOW_MODEL_REQUESTS` is false during the test."""
    from pydantic_ai.models import override_allow_model_requests

    with override_allow_model_requests(False):
        yield


@pytest.fixture
def agentool_recording_path(request: pytest.FixtureRequest) -> Path:
    """The older place of this test's cassette file, `recordings/<test name>.json`, still found."""
    return _file(request, request.path.parent / 'recordings', request.node.name, 'recording')


@pytest.fixture
def agentool_record_mode(request: pytest.FixtureRequest) -> RecordMode:
    """The test's cassette mode: the command-line option, else its marker, else the ini option."""
    mode: object = request.config.getoption(_MODE)
    marker = request.node.get_closest_marker(_MARKER)
    if mode is None and marker is not None:
        mode = marker.kwargs.get('mode', marker.args[0] if marker.args else None)
    if mode is None:
        mode = request.config.getini(_MODE) or 'none'
    if mode not in _MODES:
        raise pytest.UsageError(f'agentool: unknown cassette record mode {quote(str(mode))}; use one of {_MODES}')
    return mode  # type: ignore[return-value]


@pytest.fixture
def agentool_cassette_path(request: pytest.FixtureRequest) -> Path:
    """This test's cassette file: `cassettes/<module>/<test name>.json` (see "Strict cassettes")."""
    marker = request.node.get_closest_marker(_MARKER)
    name = marker.kwargs.get('name') if marker is not None else None
    folder = request.path.parent / 'cassettes' / _safe(request.path.stem, 'tests')
    return _file(request, folder, str(name) if name else request.node.name, 'cassette')


class CassetteFactory:
    """Call it with the real model (or `None`) for the test's `CassetteModel` (`name=`: its own file)."""

    def __init__(self, path: Path, mode: RecordMode, *, test: str | None = None) -> None:
        self.path: Path = path
        self.mode: RecordMode = mode
        self.test: str | None = test
        """The test's node id: the models' errors give the pytest command that records it."""
        self.models: list[CassetteModel] = []
        """Every model made for this test: at teardown, their unused exchanges fail it."""
        self._writers: set[Path] = set()  # the files a model of this test records to: one model each

    def __call__(
        self,
        wrapped: Model | str | None = None,
        *,
        name: str | None = None,
        redact: Redactor | None = None,
        scrub: bool = True,
    ) -> CassetteModel:
        from ..errors import CassetteError
        from ._advice import RecordAdvice, advising
        from .cassette_model import CassetteModel

        __tracebackhide__ = True  # cassette errors point at the test, not here
        if name is not None and not isinstance(cast(object, name), str):
            raise CassetteError(
                f'agentool_cassette(name=...) must be a string or None; got {quote(name)}',
                name=quote(name),
                reason='name',
            )
        path = self.path if name is None else self.path.with_name(f'{self.path.stem}.{_safe(name, "model")}.json')
        mode = self.mode
        may_record = wrapped is not None and mode != 'none'
        if may_record and path in self._writers:
            # Two models recording to one file would overwrite each other's exchanges; replaying ones may share.
            raise CassetteError(
                f'this test already has a cassette model recording to {quote(str(path))}; give each further '
                "recording model its own file with agentool_cassette(model, name='...')",
                path=str(path),
                reason='duplicate',
            )
        # Here the mode comes from the command line, not the model's arguments: its errors say so.
        with advising(RecordAdvice(test=self.test or '')):
            model = CassetteModel(wrapped, cassette=path, mode=mode, redact=redact, scrub=scrub)
        self.models.append(model)
        if may_record and (mode != 'once' or not path.exists()):
            self._writers.add(path)
        return model


@pytest.fixture
def agentool_cassette(
    request: pytest.FixtureRequest, agentool_cassette_path: Path, agentool_record_mode: RecordMode
) -> Iterator[CassetteFactory]:
    """Makes this test's `CassetteModel`; exchanges a replay left unused fail it (see the testing guide)."""
    factory = CassetteFactory(agentool_cassette_path, agentool_record_mode, test=request.node.nodeid)
    yield factory
    marker = request.node.get_closest_marker(_MARKER)
    allowed = marker.kwargs.get('allow_unused') if marker is not None else None
    if allowed is None:
        allowed = request.config.getini(_ALLOW_UNUSED)
    if allowed or request.node.stash.get(_FAILED, False):
        return
    from .commands import unused_report

    report = unused_report(factory.models)
    if report:
        pytest.fail(report, pytrace=False)


_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # A test that failed already says what went wrong: its unused exchanges would only add noise.
    report = yield
    if call.when == 'call' and report.failed:
        item.stash[_FAILED] = True
    return report


_MAX_STEM_BYTES = 120  # a longer name is cut and hashed: with suffixes, within a file name's 255 bytes
_HASHED = re.compile(r'-[0-9a-f]{8}\Z')


def _safe(name: str, default: str) -> str:
    # A short hash of the exact name follows whenever the mapping could make two names one.
    stem, clean, bracketed = _mapped(name, default)
    cut = stem.encode('utf-8')[:_MAX_STEM_BYTES].decode('utf-8', 'ignore')
    if clean and not bracketed and cut == stem and not _HASHED.search(stem):
        return stem
    return f'{cut}-{_digest(name)}'


def _mapped(name: str, default: str) -> tuple[str, bool, bool]:
    # The name made safe (`test[id]` as `test_id`), whether nothing was replaced, whether it had an id.
    head, bracket, rest = name.partition('[')
    param = rest[:-1] if bracket and rest.endswith(']') else ''
    pieces = [head, param] if param else [name]
    safe = [re.sub(r'[^\w.-]+', '_', piece).strip('_.') for piece in pieces]
    return '_'.join(filter(None, safe)) or default, safe == pieces, bool(param)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]


def _file(request: pytest.FixtureRequest, folder: Path, name: str, default: str) -> Path:
    # A parametrized id keeps its plain mapped name, as cassettes were always named, unless the
    # test module also has that name (a plain test of that name owns that file).
    mapped, clean, _ = _mapped(name, default)
    stem, older = _safe(name, default), mapped if clean else f'{mapped}-{_digest(name)}'
    fits = len(older.encode('utf-8')) <= _MAX_STEM_BYTES
    if older != stem and fits and not _names_a_test(getattr(request.node, 'module', None), older):
        return folder / f'{older}.json'
    return folder / f'{stem}.json'


def _names_a_test(namespace: object, name: str, depth: int = 0) -> bool:
    # Whether the module (or a class in it, to a few levels) has an attribute `name` (a helper too).
    if namespace is None or depth > 3:
        return False
    try:
        attributes = dict(vars(namespace))
    except TypeError:
        return False
    if name in attributes or (isinstance(namespace, type) and hasattr(namespace, name)):
        return True
    return any(
        isinstance(value, type) and _names_a_test(value, name, depth + 1)
        for key, value in attributes.items()
        if not key.startswith('__')
    )


@pytest.fixture(autouse=True)
def _agentool_defaults(request: pytest.FixtureRequest) -> None:
    # A no-op unless the project turned the ini options on.
    if request.config.getini(_ISOLATE):
        request.getfixturevalue('agentool_injector')
    if request.config.getini(_BLOCK):
        request.getfixturevalue('agentool_no_model_requests')
