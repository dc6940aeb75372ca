"""The words of the settings' errors: what a setting allows, which setting was refused and why.

A refused value stops the start-up with one line naming each setting, its value, where it came
from (its flag or its environment variable) and what it allows (``allowed_values``, worded from
the setting's JSON schema), so that the user can fix it without reading the code. A server
that cannot listen where its settings say (``ListenError``, raised by the probes' server and the
webhooks' server) is worded the same way: its two settings, their values and origins, and what the
system answered.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from elasticquota.settings.model import Settings
from elasticquota.settings.values import PATTERN_WORDS


def _words(schema: Mapping[str, Any]) -> str:
    """One JSON schema (of a field, or of a list's items) in words."""
    if "anyOf" in schema:
        kinds = [option for option in schema["anyOf"] if option.get("type") != "null"]
        return " or ".join(_words(kind) for kind in kinds) + ", or unset"
    if "enum" in schema or "const" in schema:
        names = schema.get("enum", [schema.get("const")])
        return "one of " + ", ".join(str(name) for name in names)
    kind = schema.get("type")
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return f"a JSON list, each item {_words(schema.get('items', {}))}"
    if kind in ("number", "integer"):
        return _number_words(schema, "a number" if kind == "number" else "an integer")
    if kind == "string":
        return _string_words(schema)
    return "anything"


def _number_words(schema: Mapping[str, Any], noun: str) -> str:
    if "minimum" in schema and "maximum" in schema:
        return f"{noun} from {schema['minimum']:g} to {schema['maximum']:g}"
    limits = [
        f"{words} {schema[key]:g}"
        for key, words in (
            ("minimum", "at least"),
            ("exclusiveMinimum", "above"),
            ("maximum", "at most"),
            ("exclusiveMaximum", "below"),
        )
        if key in schema
    ]
    return " ".join([noun, " and ".join(limits)]).strip()


def _string_words(schema: Mapping[str, Any]) -> str:
    pattern = schema.get("pattern")
    words = [PATTERN_WORDS.get(pattern, f"a string matching {pattern}") if pattern else "a string"]
    if schema.get("minLength", 0) >= 1 and not pattern:
        words[0] = "a non-empty string"
    if "maxLength" in schema:
        words.append(f"of at most {schema['maxLength']} characters")
    return " ".join(words)


def allowed_values(name: str) -> str:
    """What the setting ``name`` accepts, in words: ``a number from 0.01 to 3600``."""
    return _words(Settings.model_json_schema()["properties"][name])


#: pydantic-settings' words for a value of the environment it cannot even parse (a list that is
#: not JSON): the field is named, the value is not.
_UNPARSABLE = re.compile(r'error parsing value for field "(?P<name>[a-z_]+)"')


def _origin(name: str, flags: Mapping[str, str]) -> str:
    """Where a setting's value came from: its flag if given, else its environment variable."""
    variable = f"{Settings.model_config.get('env_prefix', '')}{name.upper()}"
    if name in flags:
        return flags[name]
    if any(key.upper() == variable for key in os.environ):
        return variable
    return ""


def _given(name: str, value: Any, flags: Mapping[str, str], where: str = "") -> str:
    """``eviction_rate = '0' (from ELASTIC_QUOTA_EVICTION_RATE)``."""
    origin = _origin(name, flags)
    return f"{name}{where} = {value!r}" + (f" (from {origin})" if origin else "")


def _setting_words(name: str, value: Any, flags: Mapping[str, str], where: str = "") -> str:
    return f"{_given(name, value, flags, where)}: allowed: {allowed_values(name)}"


def invalid_settings_message(error: Exception, flags: Mapping[str, str] | None = None) -> str:
    """One line naming each refused setting, its value (and where it came from: ``flags`` maps
    the settings given on the command line to their flag) and what it allows."""
    flags = flags or {}
    if isinstance(error, ValidationError):
        problems = []
        for item in error.errors():
            location = item["loc"]
            name = str(location[0]) if location else ""
            if name in Settings.model_fields:
                where = "".join(f"[{part}]" for part in location[1:])
                problems.append(_setting_words(name, item["input"], flags, where))
            else:  # a rule between settings: its message names them and their values
                problems.append(str(item["msg"]).removeprefix("Value error, "))
        text = "; ".join(problems)
    else:
        match = _UNPARSABLE.search(str(error))
        if match and match["name"] in Settings.model_fields:
            name = match["name"]
            variable = _origin(name, {})
            value = next(
                (v for k, v in os.environ.items() if variable and k.upper() == variable), None
            )
            text = _setting_words(name, value, flags)
        else:
            text = str(error)
    return "invalid settings: " + " ".join(text.splitlines())


#: The settings that name a file the operator reads at start-up.
FILE_SETTINGS = ("kubeconfig", "webhook_cert_file", "webhook_key_file", "webhook_ca_file")


def missing_files(settings: Settings, flags: Mapping[str, str] | None = None) -> str:
    """One line naming each file setting whose file does not exist ('' when all do): checked
    when the operator starts (not when settings are made: tests make them with paths of files
    that are never opened)."""
    missing = [
        f"{_given(name, value, flags or {})}: no such file"
        for name in FILE_SETTINGS
        if (value := getattr(settings, name)) is not None and not os.path.isfile(value)
    ]
    return "invalid settings: " + "; ".join(missing) if missing else ""


def unusable_settings_message(
    names: Sequence[str], settings: Settings, reason: str, flags: Mapping[str, str] | None = None
) -> str:
    """One line naming settings that are valid but could not be used where the operator runs,
    with their values and where they came from, and the ``reason`` (e.g. a port taken)."""
    given = ", ".join(_given(name, getattr(settings, name), flags or {}) for name in names)
    return f"invalid settings: {given}: {reason}"


#: What a failed bind answers (asyncio's ``create_server`` says "error while attempting to bind"):
#: the port is taken, the address is not one of this host's, or the port is privileged.
_BIND_ERRORS = (errno.EADDRINUSE, errno.EADDRNOTAVAIL)


class ListenError(Exception):
    """A server cannot listen where its settings say: the port is taken, the address is not one
    of this host's, or the port is privileged. A setting to change, not a bug: ``settings`` names
    the port's and the address's settings, the message says what the system answered."""

    def __init__(self, settings: tuple[str, str], host: str, port: int, error: OSError) -> None:
        self.settings = settings
        reason = os.strerror(error.errno).lower() if error.errno else str(error)
        super().__init__(f"cannot listen on {host}:{port}: {reason}")


def is_bind_error(error: OSError) -> bool:
    """Whether ``error`` is a listening socket's bind refused (not, say, a file not readable)."""
    return error.errno in _BIND_ERRORS or (
        error.errno == errno.EACCES and "attempting to bind" in str(error)
    )
