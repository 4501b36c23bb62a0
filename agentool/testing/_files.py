"""The file base of `agentool.testing`: reading and writing its JSON files with typed errors.

One place for the file boundary: a path with a NUL, a file too large (its size is checked before
a byte is parsed), bytes that are not UTF-8 JSON, a document of another format or version, data
with a lone surrogate (which UTF-8 cannot encode), a document nested deeper than `MAX_DEPTH` and
every `OSError` become the error class the caller names, with the path and a `reason` in
`details`. Files are written next to their target and renamed over it, so a crash never leaves
half a file; a symbolic link is followed (the file it points to is rewritten, the link stays) and
the file keeps its permissions.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from ..errors import AgenToolError, clip, quote

__all__ = (
    'MAX_FILE_BYTES',
    'MAX_DEPTH',
    'as_path',
    'read_json',
    'read_document',
    'check_document',
    'write_json',
    'dumps',
)

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest recording or cassette file read: larger ones are refused before parsing."""

MAX_DEPTH = 200
"""The deepest nesting of objects and arrays a file may hold, read or written. pydantic serialises
about 250 levels; past that a cassette could be read but neither shown nor saved, so it is
refused whole, on both sides, with room for the levels a cassette wraps its data in."""

ErrorFactory = Callable[..., AgenToolError]


def as_path(path: object, what: str, error: ErrorFactory) -> Path:
    """`path` as a `Path`, refusing what no filesystem accepts (not a path, empty, a NUL byte)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    text = path if isinstance(path, str) else _fspath(path)
    if not text:
        shown = quote(path)
        raise error(f'{what} path must be a non-empty str or Path; got {shown}', path=shown, reason='not_a_path')
    if '\x00' in text:
        raise error(f'{what} path {quote(text)} holds a NUL byte', path=quote(text), reason='nul')
    return Path(text)


def _fspath(path: object) -> str:
    if isinstance(path, os.PathLike):
        text: object = os.fspath(cast('os.PathLike[Any]', path))
        return text if isinstance(text, str) else ''
    return ''


def read_json(path: Path, what: str, error: ErrorFactory, *, missing: str, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The parsed JSON at `path`; `missing` is the message for a file that does not exist."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    name = repr(str(path))
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise error(
                f'{what} {name} is {size} bytes, over the limit of {max_bytes}',
                path=str(path),
                reason='too_large',
                size=size,
                limit=max_bytes,
            )
        with path.open('rb') as stream:
            raw = stream.read(max_bytes + 1)  # the file may have grown since stat
    except FileNotFoundError:
        raise error(missing, path=str(path), reason='missing') from None
    except OSError as caught:  # a directory, no permission...
        raise error(
            f'cannot read {what} {name}: {caught.strerror or caught}', path=str(path), reason='unreadable'
        ) from None
    if len(raw) > max_bytes:
        raise error(f'{what} {name} is over the limit of {max_bytes} bytes', path=str(path), reason='too_large')
    try:
        data = json.loads(raw.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as caught:
        raise error(
            f'{name} is not an agentool {what}: not UTF-8 JSON ({clip(str(caught))})',
            path=str(path),
            reason='invalid_json',
        ) from None
    _check_depth(data, f'{what} {name}', str(path), error)
    return data


def _check_depth(data: Any, named: str, path: str, error: ErrorFactory) -> None:
    """Refuse `data` nested deeper than `MAX_DEPTH` (one pass, no recursion)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    level: list[Any] = [data]
    depth = 0
    while level:
        containers: list[Any] = []
        for value in level:
            if isinstance(value, dict):
                containers.extend(cast('dict[str, Any]', value).values())
            elif isinstance(value, list):
                containers.extend(cast('list[Any]', value))
        level = [value for value in containers if isinstance(value, dict | list)]
        depth += 1
        if depth > MAX_DEPTH and level:
            raise error(
                f'{named} is nested more than {MAX_DEPTH} levels deep, more than agentool reads or writes',
                path=path,
                reason='too_deep',
                limit=MAX_DEPTH,
            )


def read_document(
    path: Path, what: str, error: ErrorFactory, *, formats: Mapping[str, tuple[int, ...]], missing: str
) -> dict[str, Any]:
    """The JSON object at `path`, checked to be one of `formats` (format name to the versions read)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    return check_document(read_json(path, what, error, missing=missing), str(path), what, error, formats=formats)


def check_document(
    data: Any, source: str, what: str, error: ErrorFactory, *, formats: Mapping[str, tuple[int, ...]]
) -> dict[str, Any]:
    """`data` if it is a JSON object whose `format` is one of `formats` at a version given for it."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    if not isinstance(data, dict):
        shown = type(cast(object, data)).__name__
        raise error(
            f'{source!r} is not an agentool {what}: a JSON {shown}, not an object', path=source, reason='invalid'
        )
    document = cast('dict[str, Any]', data)
    kind = document.get('format')
    if not isinstance(kind, str) or kind not in formats:
        raise error(
            f'{source!r} is not an agentool {what} (format {quote(kind)})',
            path=source,
            reason='invalid',
            format=quote(kind),
        )
    version = document.get('version')
    if version not in formats[kind] or isinstance(version, bool):
        read = ' or '.join(str(number) for number in formats[kind])
        raise error(
            f'{source!r} is {kind} version {quote(version)}; this agentool reads version {read}',
            path=source,
            reason='version',
            version=quote(version),
        )
    return document


def dumps(data: Any) -> str:
    """Diff-friendly JSON: sorted keys, one value a line indented by one space (a deep cassette is
    a fifth smaller than with two), one trailing newline, non-ASCII kept."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + '\n'


def write_json(path: Path, data: Any, what: str, error: ErrorFactory) -> Path:
    """Write `data` to `path` whole (parent folders created), or raise `error` and leave `path` as it was.

    A symbolic link is followed: the file it points to is replaced (atomically, beside itself) and
    the link stays. An existing file keeps its permission bits; a new one gets the umask's, as
    `open` would give it. Returns the file written (the link's target for a link).
    """
    __tracebackhide__ = True  # cassette errors point at the test, not here
    name = repr(str(path))
    _check_depth(data, f'{what} {name}', str(path), error)
    try:
        path = _target(path)
    except (OSError, RuntimeError) as caught:  # a link loop (RuntimeError before Python 3.13)
        raise error(f'cannot write {what} {name}: {caught}', path=str(path), reason='unwritable') from None
    try:
        encoded = dumps(data).encode('utf-8')
    except UnicodeEncodeError as caught:  # a lone surrogate in some string
        raise error(
            f'cannot write {what} {name}: its data holds text UTF-8 cannot encode ({clip(str(caught))})',
            path=str(path),
            reason='unencodable',
        ) from None
    except ValueError as caught:  # NaN or infinity, which JSON has no words for
        raise error(f'cannot write {what} {name}: {clip(str(caught))}', path=str(path), reason='invalid') from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _existing_mode(path)
        handle, temporary = _temporary(path)
    except OSError as caught:
        raise _unwritable(path, what, caught, error) from None
    try:
        with os.fdopen(handle, 'wb') as stream:
            stream.write(encoded)
            if mode is not None:  # a 0644 file stays 0644 (a 0600 one stays 0600)
                os.fchmod(stream.fileno(), mode)
        os.replace(temporary, path)
    except BaseException as caught:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(caught, OSError):
            raise _unwritable(path, what, caught, error) from None
        raise
    return path


def _target(path: Path) -> Path:
    """The file `path` names: a symbolic link's target (replacing the link would leave that file as it was)."""
    if not path.is_symlink():
        return path
    return path.resolve(strict=False)


def _existing_mode(path: Path) -> int | None:
    """The permission bits of the file at `path`, kept by its rewrite; `None` for a new file."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside `path`, open for writing: made with mode 0666 so the umask applies, as to
    any new file (`tempfile.mkstemp` makes 0600)."""
    for _ in range(100):
        name = str(path.parent / f'.{path.name}.{secrets.token_hex(6)}.tmp')
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_BINARY', 0), 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, 'no free temporary name', str(path.parent))


def _unwritable(path: Path, what: str, caught: OSError, error: ErrorFactory) -> AgenToolError:
    return error(
        f'cannot write {what} {str(path)!r}: {caught.strerror or caught}',
        path=str(path),
        reason='unwritable',
        error=str(caught),
    )
