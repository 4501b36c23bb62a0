"""The file base of `agentool.testing`: reading and writing its JSON files with typed errors.

Files are written beside their target and renamed over it, so a crash never leaves half a file;
a symbolic link's target is rewritten (the link stays) and the file keeps its permissions.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, cast

from ..errors import CassetteError, clip, quote

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest recording or cassette file read: larger ones are refused before parsing."""

MAX_DEPTH = 200
"""The deepest nesting a file may hold: pydantic serialises about 250 levels, less what a cassette adds."""


def as_path(path: object) -> Path:
    """`path` as a cassette's `Path`, refusing what no filesystem accepts (not a path, empty, a NUL byte)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    text = os.fspath(cast('os.PathLike[Any]', path)) if isinstance(path, str | os.PathLike) else ''
    if not text or not isinstance(text, str):
        shown = quote(cast(object, path))
        raise CassetteError(
            f'cassette path must be a non-empty str or Path; got {shown}', path=shown, reason='not_a_path'
        )
    if '\x00' in text:
        raise CassetteError(f'cassette path {quote(text)} holds a NUL byte', path=quote(text), reason='nul')
    return Path(text)


def place(path: Path | None) -> str:
    """A cassette's place in a message: its path, or `(in memory)`."""
    return repr(str(path)) if path is not None else '(in memory)'


def path_detail(path: Path | None) -> str | None:  # for `details['path']`, as the file errors give it
    return str(path) if path is not None else None


def cassette_error(path: Path | None, said: str, **details: Any) -> CassetteError:
    """The `CassetteError` `cassette <path> <said>`, with `details` and the path."""
    return CassetteError(f'cassette {place(path)} {said}', path=path_detail(path), **details)


def read_json(path: Path, what: str, *, missing: str) -> Any:
    """The parsed JSON at `path`; `missing` is the message for a file that does not exist."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    name, limit, raw = repr(str(path)), MAX_FILE_BYTES, b''
    try:
        size = path.stat().st_size  # checked before a byte is read
        if size <= limit:
            with path.open('rb') as stream:
                raw = stream.read(limit + 1)  # the file may have grown since stat
            size = len(raw)
    except FileNotFoundError:
        raise CassetteError(missing, path=str(path), reason='missing') from None
    except OSError as caught:  # a directory, no permission...
        raise CassetteError(
            f'cannot read {what} {name}: {caught.strerror or caught}', path=str(path), reason='unreadable'
        ) from None
    if size > limit:
        raise CassetteError(
            f'{what} {name} is {size} bytes, over the limit of {limit}',
            path=str(path),
            reason='too_large',
            size=size,
            limit=limit,
        )
    try:
        data = json.loads(raw.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as caught:
        raise CassetteError(
            f'{name} is not an agentool {what}: not UTF-8 JSON ({clip(str(caught))})',
            path=str(path),
            reason='invalid_json',
        ) from None
    _check_depth(data, f'{what} {name}', str(path))
    return data


def _check_depth(data: Any, named: str, path: str) -> None:
    """Refuse `data` nested deeper than `MAX_DEPTH` (one pass, no recursion)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    level: list[Any] = [data] if isinstance(data, dict | list) else []
    for _ in range(MAX_DEPTH + 1):
        children: list[Any] = []
        for value in level:
            children.extend(cast('dict[str, Any]', value).values() if isinstance(value, dict) else value)
        level = [value for value in children if isinstance(value, dict | list)]
    if level:
        raise CassetteError(
            f'{named} is nested more than {MAX_DEPTH} levels deep, more than agentool reads or writes',
            path=path,
            reason='too_deep',
            limit=MAX_DEPTH,
        )


def dumps(data: Any) -> str:
    """Diff-friendly JSON: sorted keys, one value a line indented by one space, non-ASCII kept."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + '\n'


def write_json(path: Path, data: Any, what: str) -> Path:
    """Write `data` to `path` whole, or raise and leave it as it was; the file written (a link's target)."""
    __tracebackhide__ = True  # cassette errors point at the test, not here
    _check_depth(data, f'{what} {str(path)!r}', str(path))
    try:
        encoded = dumps(data).encode('utf-8')
        # Replacing a link would leave the file it points to as it was.
        path = path.resolve(strict=False) if path.is_symlink() else path
    except UnicodeEncodeError as caught:  # a lone surrogate in some string
        why = f'its data holds text UTF-8 cannot encode ({clip(str(caught))})'
        raise _unwritable(what, path, 'unencodable', why) from None
    except ValueError as caught:  # NaN or infinity, which JSON has no words for
        raise _unwritable(what, path, 'invalid', clip(str(caught))) from None
    except (OSError, RuntimeError) as caught:  # a link loop (RuntimeError before Python 3.13)
        raise _unwritable(what, path, 'unwritable', caught) from None
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = None
        handle, temporary = _temporary(path)
        with os.fdopen(handle, 'wb') as stream:
            stream.write(encoded)
            if mode is not None:  # a 0644 file stays 0644 (a 0600 one stays 0600)
                os.fchmod(stream.fileno(), mode)
        os.replace(temporary, path)
    except BaseException as caught:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        if isinstance(caught, OSError):
            raise _unwritable(what, path, 'unwritable', caught.strerror or caught, error=str(caught)) from None
        raise
    return path


def _unwritable(what: str, path: Path, reason: str, why: object, **details: Any) -> CassetteError:
    return CassetteError(f'cannot write {what} {str(path)!r}: {why}', path=str(path), reason=reason, **details)


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside `path`, open for writing, mode 0666 less the umask (`mkstemp` makes 0600)."""
    for _ in range(100):
        name = str(path.parent / f'.{path.name}.{secrets.token_hex(6)}.tmp')
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_BINARY', 0), 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, 'no free temporary name', str(path.parent))
