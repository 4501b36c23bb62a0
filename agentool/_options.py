"""The one family of option checks: each refuses a value with a `ConfigurationError` naming the option.

Run only where a value enters; code given a checked value does not check it again. Every message
reads `OPTION must be EXPECTED; got VALUE`, the value quoted and bounded.
"""

from __future__ import annotations

import inspect
import ipaddress
import math
import os
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NewType, TypeVar, cast, get_origin

from .errors import MAX_DETAIL_CHARS, ConfigurationError, quote

_T = TypeVar('_T')


def refuse(
    option: str, expected: str, value: object, agentool: str | None = None, *, what: str = '', **details: Any
) -> ConfigurationError:
    """The error every check raises: `[agentool NAME: ]OPTION must be EXPECTED; got VALUE` (`what` for OPTION)."""
    whose = '' if agentool is None else f'agentool {quote(agentool)}: '
    return ConfigurationError(
        f'{whose}{what or option} must be {expected}; got {quote(value)}',
        agentool=agentool,
        option=option,
        value=quote(value, MAX_DETAIL_CHARS),
        **details,
    )


def check_choice(option: str, value: object, choices: Sequence[object], *, why: str = '') -> None:
    """Refuse unless `value` is one of `choices` (listed as `supported`); `why` ends the message."""
    if any(value is choice or (type(value) is type(choice) and value == choice) for choice in choices):
        return
    raise refuse(option, f'one of {", ".join(map(repr, choices))}{why}', value, supported=list(choices))


NAME_REFUSED_CATEGORIES = frozenset({'Cc', 'Cf', 'Cs', 'Zl', 'Zp'})
"""Unicode categories no name may hold (controls, format characters, surrogates, line separators):
each is invisible or breaks the line in a listing, so two names could look alike."""

_BLANK = frozenset('\u115f\u1160\u2800\u3164\uffa0')
"""Letters and symbols that render as nothing (Hangul fillers, the blank Braille pattern)."""

_UNSEEN_CATEGORIES = frozenset({'Zs', 'Mn', 'Me', 'Cn', 'Co'})
"""Categories that show no mark of their own: spaces, combining marks, unassigned and private-use code points."""


def replace_refused(text: str, replace: Callable[[str], str]) -> str:
    """`text` with each character of a `NAME_REFUSED_CATEGORIES` category replaced by `replace(char)`."""
    return ''.join(replace(char) if unicodedata.category(char) in NAME_REFUSED_CATEGORIES else char for char in text)


def _refused_character(text: str) -> str | None:
    """The first character of `text` in a refused category; `str.isprintable` clears most names at C speed."""
    if text.isprintable():
        return None
    return next((char for char in text if unicodedata.category(char) in NAME_REFUSED_CATEGORIES), None)


def _visible(text: str) -> bool:
    """Whether `text` holds a character that renders as a mark (ASCII letters, digits and punctuation at C speed)."""
    if any('!' <= char <= '~' for char in text[:64]):
        return True
    return any(char not in _BLANK and unicodedata.category(char) not in _UNSEEN_CATEGORIES for char in text)


def check_label(option: str, value: object, *, agentool: str | None = None, what: str | None = None) -> str:
    """`value` if it is a name every listing can show: visible, no character of `NAME_REFUSED_CATEGORIES`."""
    details: dict[str, str] = {}
    if not (isinstance(value, str) and value and not value.isspace()):
        problem = f'must be a non-empty string, not only whitespace; got {quote(value)} ({type(value).__name__})'
    elif (char := _refused_character(value)) is not None:
        details['character'] = f'U+{ord(char):04X}'
        problem = (
            f'must not contain control, format or line-separator characters; got {quote(value)}, '
            f'which holds {char!r} ({details["character"]}, category {unicodedata.category(char)})'
        )
    elif not _visible(value):  # '\u3164', '\u2800', a lone combining mark: accepted, then listed as a blank
        problem = f'must contain a visible character; got {quote(value)}, which renders blank'
    else:
        return value
    raise ConfigurationError(
        f'{what or option} {problem}', agentool=agentool, option=option, value=quote(value), **details
    )


def check_labels(option: str, value: object, *, agentool: str | None = None) -> list[str]:
    """`value` as a list if it is a collection of usable names (`check_label`); a lone string is refused."""
    items = check_strings(option, value)
    for item in items:
        check_label(option, item, agentool=agentool)
    return items


def check_name(name: object) -> str:
    """`name` if it is a usable agentool name (`check_label`); else `ConfigurationError` naming option `name`."""
    return check_label('name', name, what='an agentool name')


def check_limit(
    option: str,
    value: object,
    *,
    agentool: str | None = None,
    optional: bool = False,
    minimum: int = 1,
    maximum: int | None = None,
) -> None:
    """Refuse unless `value` is an int (not a bool) from `minimum` to `maximum`; `None` if `optional`."""
    if (value is None and optional) or (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= minimum
        and (maximum is None or value <= maximum)
    ):
        return
    if maximum is not None:
        expected = f'an int from {minimum} to {maximum}'
    else:
        expected = 'a positive int' if minimum == 1 else f'an int of at least {minimum}'
    raise refuse(option, f'{expected} or None' if optional else expected, value, agentool)


def check_flag(option: str, value: object) -> None:
    """Refuse unless `value` is `True` or `False` (a truthy string is not a flag)."""
    if not isinstance(value, bool):
        raise refuse(option, 'True or False', value)


def check_type_form(option: str, value: object, agentool: str | None = None) -> None:
    """Refuse unless `value` is a type or a typing form: catches `deps_type=Deps()`, which pydantic-ai takes."""
    if value is None or value is Any or isinstance(value, type | TypeVar | NewType) or get_origin(value) is not None:
        return
    if hasattr(value, '__value__'):  # a `type X = ...` alias (Python 3.12+)
        return
    raise refuse(option, 'a type', value, agentool)


def check_function(option: str, value: object, *, optional: bool = False, takes: Sequence[str] = ()) -> None:
    """Refuse unless `value` is callable (or `None` when `optional`), and callable with `takes` positionally."""
    if not (callable(value) or (value is None and optional)):
        raise refuse(option, 'a function or None' if optional else 'a function', value)
    if value is None or not takes:
        return
    try:
        signature = inspect.signature(cast('Callable[..., Any]', value))
    except (TypeError, ValueError):  # a builtin or an extension type without one
        return
    try:
        signature.bind(*takes)
    except TypeError:
        expected = f'a function called as {option}({", ".join(takes)})'
        raise refuse(option, f'{expected} or None' if optional else expected, value) from None


def check_instance(
    option: str,
    value: object,
    kind: type | tuple[type, ...],
    *,
    optional: bool = False,
    agentool: str | None = None,
    expected: str | None = None,
) -> None:
    """Refuse unless `value` is a `kind` (or `None` when `optional`); `expected` overrides `a Kind`."""
    if not (isinstance(value, kind) or (value is None and optional)):
        if expected is None:
            name = kind.__name__ if isinstance(kind, type) else ' or '.join(k.__name__ for k in kind)
            expected = f'an {name}' if name[0] in 'AEIOU' else f'a {name}'
        raise refuse(option, f'{expected} or None' if optional else expected, value, agentool)


def check_tracer(option: str, value: object) -> None:
    """Refuse unless `value` is `None` or a tracer (a callable `start_as_current_span`)."""
    if value is not None and not callable(getattr(value, 'start_as_current_span', None)):
        raise refuse(option, 'an OpenTelemetry Tracer (with start_as_current_span) or None', value)


def check_text(option: str, value: object, *, optional: bool = False, blank: bool = True) -> None:
    """Refuse unless `value` is a string (not only whitespace unless `blank`), or `None` when `optional`."""
    if (isinstance(value, str) and (blank or value.strip())) or (value is None and optional):
        return
    expected = 'a string' if blank else 'a non-blank string'
    raise refuse(option, f'{expected} or None' if optional else expected, value)


def check_instances(option: str, value: object, kind: type[_T], expected: str = '') -> list[_T]:
    """`value` as a list if it is a collection (not a string or a mapping) of `kind`s."""
    if isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
        items = list(cast('Iterable[object]', value))
        if all(isinstance(item, kind) for item in items):
            return cast('list[_T]', items)
    raise refuse(option, expected or f'a list of {kind.__name__}', cast(object, value))


def check_strings(option: str, value: object) -> list[str]:
    """`value` as a list if it is a collection of strings (a lone string is refused: it is not a list)."""
    return check_instances(option, value, str, 'a list of strings')


def check_string_or_strings(option: str, value: object) -> list[str]:
    """`value` as a list of strings: one string is a list of one."""
    return [value] if isinstance(value, str) else check_instances(option, value, str, 'a string or a list of strings')


def check_string_map(option: str, value: object) -> dict[str, str]:
    """`value` as a dict if it is a mapping of strings to strings."""
    if isinstance(value, Mapping):
        items = cast('Mapping[object, object]', value)
        if all(isinstance(key, str) and isinstance(text, str) for key, text in items.items()):
            return dict(cast('Mapping[str, str]', items))
    raise refuse(option, 'a dict of strings to strings', cast(object, value))


def check_examples(value: object) -> list[dict[str, Any]]:
    """`value` as a list of dicts if it is a collection of mappings (example inputs, with outputs if given)."""
    items = check_instances('examples', value, cast('type[Mapping[str, Any]]', Mapping), 'a list of dicts')
    return [dict(item) for item in items]


def check_seconds(option: str, value: object) -> None:
    """Refuse unless `value` is a positive, finite number of seconds."""
    if not (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0):
        raise refuse(option, 'a positive, finite number of seconds', value)


def check_url_path(option: str, value: object) -> None:
    """Refuse unless `value` is a URL path: starting with '/', no space or control character."""
    if not (isinstance(value, str) and value.startswith('/')):
        raise refuse(option, "a URL path starting with '/'", value)
    if any(char.isspace() or not char.isprintable() for char in value):
        raise refuse(option, 'a URL path without spaces or control characters', value)


def check_origins(option: str, value: object) -> None:
    """Refuse unless `value` is a tuple or list of what browsers send as `Origin` (no path or query)."""
    example = "origins such as 'https://app.example.com'"
    if not isinstance(value, tuple | list):
        raise refuse(option, f'a tuple of {example}', value)
    for origin in cast('tuple[object, ...]', value):
        text = origin if isinstance(origin, str) else ''
        scheme, separator, rest = text.rstrip('/').partition('://')
        if not (scheme and separator and rest and text.isprintable() and text.isascii()) or any(
            char in rest for char in '/?#@ '
        ):
            raise refuse(
                option,
                f'{example} (a scheme and a host, with its port if any, and nothing after: no browser sends '
                'a path, a query or credentials in Origin)',
                origin,
            )


def check_proxies(option: str, value: object) -> None:
    """Refuse unless `value` is a tuple or list of IP addresses or networks."""
    if not isinstance(value, tuple | list):
        raise refuse(option, "a tuple of addresses or networks ('10.0.0.5', '10.0.0.0/24')", value)
    for proxy in cast('tuple[object, ...]', value):
        try:
            ipaddress.ip_network(cast(str, proxy), strict=False)
        except (TypeError, ValueError):
            raise refuse(option, 'IP addresses or networks', proxy) from None


def unsendable(token: str) -> bool:
    """Whether no client can send `token` in an `Authorization` header (a control or space character)."""
    return any(not (char.isprintable() and (char == ' ' or not char.isspace())) for char in token)


_TOKEN_NAME_CHARS = 64


def check_tokens(option: str, value: object) -> None:
    """Refuse unless `value` is `None` or a mapping of printable names to distinct sendable tokens (never quoted)."""
    if value is None:
        return
    if not isinstance(value, Mapping) or not value:
        raise refuse(option, "a non-empty mapping of names to tokens ({'alice': '...'})", cast(object, value))
    items = cast('Mapping[object, object]', value).items()
    for name, token in items:
        if not (isinstance(name, str) and name and name.isprintable() and len(name) <= _TOKEN_NAME_CHARS):
            raise refuse(option, f'named by printable text of 1 to {_TOKEN_NAME_CHARS} characters', name)
        if not (isinstance(token, str) and token.strip() == token and token and not unsendable(token)):
            raise ConfigurationError(
                f'{option}: the token named {quote(name)} must be a non-empty string a client can send in a '
                'header (no control or space characters around or in it)',
                option=option,
                name=quote(name),
            )
    if len({token for _, token in items}) < len(items):
        raise ConfigurationError(
            f'{option}: two names share one token; each name needs its own token (it is how a client is told apart)',
            option=option,
        )


def check_share(option: str, value: object, whole_option: str, whole: object) -> None:
    """Refuse unless one client's limit `value` is below the server's `whole` (or both are 1); types unchecked."""
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (value, whole)):
        return
    if cast(int, value) < cast(int, whole) or value == whole == 1:
        return
    raise ConfigurationError(
        f'{option} ({value}) must be below {whole_option} ({whole}), so that one client can never fill the server',
        option=option,
        value=quote(value),
    )


def check_one_of(option: str, given: Mapping[str, object], gives: str) -> None:
    """Refuse (naming `option`) unless at most one of `given` is set; `gives` says what each gives."""
    named = [name for name, value in given.items() if value is not None]
    if len(named) > 1:
        raise ConfigurationError(f'{" and ".join(named)} each give {gives}: give one of them', option=option)


def check_path(option: str, value: object) -> None:
    """Refuse unless `value` is `None` or a path (a `str` or an `os.PathLike`)."""
    check_instance(option, value, (str, os.PathLike), optional=True, expected='a path (str or os.PathLike)')


def refusals(*checks: Callable[[], object]) -> dict[str, str]:
    """Run every check; the message of each that refused its value, by option (the first per option)."""
    found: dict[str, str] = {}
    for check in checks:
        try:
            check()
        except ConfigurationError as error:
            found.setdefault(str(error.details.get('option', '')), error.message)
    return found


def aware(option: str, stamp: object) -> datetime:
    """`stamp` timezone-aware: a naive datetime is read as local time (`.astimezone()`)."""
    if not isinstance(stamp, datetime):
        raise refuse(option, 'a datetime', stamp)
    return stamp if stamp.utcoffset() is not None else stamp.astimezone()
