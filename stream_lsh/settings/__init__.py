"""One settings object for every command: defaults, then ``STREAM_LSH_*`` environment variables,
then command-line flags; validated once, at start-up, with messages that name the variable or flag.

The object is nested (the engine's knobs, how input is read, the stream, how clients reach Kafka),
the names are flat:
``settings.stream.band_partitions`` is ``STREAM_LSH_BAND_PARTITIONS`` and ``--band-partitions``.
The engine's defaults are :class:`~stream_lsh.core.config.DedupConfig`'s, read from it.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from ..core.clock import FileClock
from ..core.config import DedupConfig
from ..errors import SettingsError
from .declare import COMMANDS
from .engine import HOUR, EngineSettings, InputSettings
from .kafka import DEFAULT_MAX_MESSAGE_BYTES, KafkaSettings, Secret
from .stream import StreamSettings
from .values import ENV_PREFIX, Compression, LogFormat, LogLevel, Order, SaslMechanism, SecurityProtocol

__all__ = [
    "COMMANDS",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ENV_PREFIX",
    "EXPLICIT_NONE",
    "Compression",
    "EngineSettings",
    "InputSettings",
    "KafkaSettings",
    "LogFormat",
    "LogLevel",
    "Order",
    "SaslMechanism",
    "Secret",
    "SecurityProtocol",
    "Settings",
    "SettingsError",
    "StreamSettings",
    "settings_reference",
]

#: An override meaning "this setting is None" (``--containment none``), where None means "not given".
EXPLICIT_NONE: Any = type("ExplicitNone", (), {"__repr__": lambda self: "EXPLICIT_NONE"})()
#: Variables of the prefix that are not settings: the Apache Kafka jar cache (stream/brokers), the
#: real-prose cache (synthetic/real_prose), and the test suite's own (``STREAM_LSH_TEST_*``),
#: which its worker processes inherit.
OTHER_VARIABLES = frozenset({"STREAM_LSH_KAFKA_CACHE", "STREAM_LSH_PROSE_CACHE"})
TEST_VARIABLES_PREFIX = "STREAM_LSH_TEST_"


def _refuse_unknown_variables(environ: Mapping[str, str], settings: set[str]) -> None:
    """A misspelled variable would otherwise be ignored in silence, and the default used instead
    of what the operator meant: refuse it, naming the closest valid one."""
    known = settings | OTHER_VARIABLES
    unknown = sorted(
        name
        for name in environ
        if name.startswith(ENV_PREFIX) and name not in known and not name.startswith(TEST_VARIABLES_PREFIX)
    )
    if unknown:
        suffixes = sorted(valid[len(ENV_PREFIX) :] for valid in known)  # the prefix would match anything
        hints = []
        for name in unknown:
            suffix = name[len(ENV_PREFIX) :]
            close = (
                [valid for valid in suffixes if valid.startswith(suffix + "_")]  # TTL: TTLHOURS
                or difflib.get_close_matches(suffix, suffixes, n=1, cutoff=0.6)
            )
            hints.append(f"{name} (did you mean {ENV_PREFIX}{close[0]}?)" if close else name)
        raise SettingsError(
            f"unknown environment variable{'s' if len(unknown) > 1 else ''}: "
            f"{', '.join(hints)}. Unset it, or see `stream-lsh --help` and the README's "
            "docs/settings.md for valid names"
        )


_GROUPS: dict[str, type] = {
    "engine": EngineSettings,
    "input": InputSettings,
    "stream": StreamSettings,
    "kafka": KafkaSettings,
}


@dataclass(frozen=True)
class Settings:
    """Every setting, in four groups. A field ``x`` of any group is read from ``STREAM_LSH_X`` and
    the flag ``--x``: names are unique across groups, so environment and flags stay flat."""

    engine: EngineSettings = field(default_factory=EngineSettings)
    input: InputSettings = field(default_factory=InputSettings)
    stream: StreamSettings = field(default_factory=StreamSettings)
    kafka: KafkaSettings = field(default_factory=KafkaSettings)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults < ``STREAM_LSH_*`` environment < ``overrides`` (flags; None means not given,
        :data:`EXPLICIT_NONE` sets a setting to None)."""
        environ = os.environ if environ is None else environ
        _refuse_unknown_variables(environ, {ENV_PREFIX + name.upper() for name in _owner})
        unknown = set(overrides) - set(_owner)
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        values: dict[str, dict[str, Any]] = {group: {} for group in _GROUPS}
        for name, (group, spec) in _owner.items():
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None:
                try:
                    values[group][name] = spec.metadata["parse"](raw)
                except ValueError as error:
                    raise SettingsError(f"{ENV_PREFIX}{name.upper()}={raw!r}: {error}") from None
            given = overrides.get(name)
            if given is EXPLICIT_NONE:  # a flag set to "none": no bound, not "not given"
                values[group][name] = None
            elif given is not None:
                values[group][name] = given
        return cls(**{group: kind(**values[group]) for group, kind in _GROUPS.items()})

    def replace(self, **changes: Any) -> Settings:
        """These settings with some changed, by their flat names (``replace(seed=7, broker=...)``),
        validated like the originals."""
        unknown = set(changes) - set(_owner)
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        groups = {}
        for group in _GROUPS:
            mine = {name: value for name, value in changes.items() if _owner[name][0] == group}
            current = getattr(self, group)
            groups[group] = dataclasses.replace(current, **mine) if mine else current
        return Settings(**groups)

    def to_environ(self) -> dict[str, str]:
        """These settings as ``STREAM_LSH_*`` variables (how ``run`` hands them to its workers)."""
        environ = {}
        for name, (group, _) in _owner.items():
            environ[ENV_PREFIX + name.upper()] = _text(getattr(getattr(self, group), name))
        return environ

    def dedup_config(self) -> DedupConfig:
        return self.engine.config()

    def file_clock(self) -> FileClock:
        """The clock of a file read by ``dedup`` or sent by ``produce``: ``now`` if set, else the
        file's own."""
        return FileClock(max_future=self.engine.max_future_hours * HOUR, now_ms=self.input.now_ms())

    @staticmethod
    def names() -> list[str]:
        """Every setting's name (``STREAM_LSH_<NAME>``, ``--<name>``), group by group."""
        return list(_owner)

    @staticmethod
    def default(name: str) -> Any:
        """The default of a setting (what ``--help`` shows)."""
        return _owner[name][1].default

    @staticmethod
    def help(name: str) -> str:
        return str(_owner[name][1].metadata["help"])

    @staticmethod
    def parse(name: str, text: str) -> Any:
        """A setting's value from text, as its environment variable is read (ValueError if it
        cannot be), for flags that take what the variable takes (``none``, any case)."""
        return _owner[name][1].metadata["parse"](text)

    @staticmethod
    def for_command(command: str) -> list[str]:
        """The settings that are flags of ``command``, in declaration order."""
        return [
            name
            for name, (_, spec) in _owner.items()
            if command in spec.metadata["commands"] and spec.metadata["flag"]
        ]

    @staticmethod
    def spec(name: str) -> Any:
        """A setting's declaration (a dataclass field, its metadata from :func:`setting`)."""
        return _owner[name][1]

    @staticmethod
    def help_on(name: str, command: str) -> str:
        """A setting's help on one command, with its default as ``--help`` shows it."""
        meta = _owner[name][1].metadata
        own = meta["help_for"].get(command)  # says its default itself
        text = str(own or meta["help"]).rstrip(".")
        return f"{text[0].upper()}{text[1:]}{'' if own else f' [{Settings.shown(name)}]'}."

    @staticmethod
    def shown(name: str) -> str:
        """A setting's default as help and the docs show it."""
        spec = _owner[name][1]
        return str(spec.metadata["shown"] or _shown(spec.default))

    @staticmethod
    def describe() -> list[tuple[str, str, str]]:
        """(environment variable, default, help) of every setting, for docs and --help."""
        return [
            (ENV_PREFIX + name.upper(), _text(spec.default), spec.metadata["help"])
            for name, (_, spec) in _owner.items()
        ]


#: setting name -> (its group, its field): the flat namespace of flags and variables
_owner: dict[str, tuple[str, Any]] = {
    spec.name: (group, spec) for group, kind in _GROUPS.items() for spec in fields(kind)
}


def _shown(value: Any) -> str:
    """A default as people read it: ``on``, ``none``, ``0.25``, ``en,de``."""
    if isinstance(value, Secret):
        return "none"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Enum):
        return str(value.value)
    if value is None or value == "":
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


#: The groups' titles in docs/settings.md.
_GROUP_TITLES = {
    "engine": "The engine: shingles, signatures, bands, verification, window, boilerplate, alerts",
    "input": "Input files and records",
    "stream": "The stream: broker, topics, partitions, batching, order, workers",
    "kafka": "Kafka clients: security, record size, compression, waits",
}


def settings_reference() -> str:
    """docs/settings.md, made from the declarations (``python -m stream_lsh.settings`` prints it;
    a test checks the file equals it)."""
    out = [
        "# Settings",
        "",
        "<!-- Made by `python -m stream_lsh.settings > docs/settings.md` from stream_lsh/settings/; "
        "edit the declarations there, not this file. -->",
        "",
        "Every setting is an environment variable `STREAM_LSH_<NAME>`, read by every command, and a flag",
        "`--<name>` of the commands listed beside it. A flag wins over the variable, the variable over",
        "the default. Values are read the same way from both: `none` for no bound, any case for choices,",
        "`true`/`false` (or `--x`/`--no-x`) for switches. A misspelled `STREAM_LSH_` variable is refused,",
        "naming the closest valid one. Secrets have no flag (a command line is visible to every user of",
        "the machine): give them in the environment or in a file (`..._FILE`).",
    ]
    for group, kind in _GROUPS.items():
        out += [
            "",
            f"## {_GROUP_TITLES[group]}",
            "",
            "| variable | flag | default | commands | what it does |",
            "|---|---|---|---|---|",
        ]
        for spec in fields(kind):
            meta = spec.metadata
            dashed = spec.name.replace("_", "-")
            flag = f"`--{dashed}`" if meta["flag"] else "none (a secret)"
            if isinstance(spec.default, bool) and meta["flag"]:
                flag += f", `--{meta['switch'] or 'no-' + dashed}`"
            commands = ", ".join(c for c in COMMANDS if c in meta["commands"])
            help_text = str(meta["help"]).replace("|", "\\|")
            variable, default = f"`{ENV_PREFIX}{spec.name.upper()}`", f"`{Settings.shown(spec.name)}`"
            out.append(f"| {variable} | {flag} | {default} | {commands} | {help_text} |")
    return "\n".join(out) + "\n"


def _text(value: Any) -> str:
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    return "none" if value is None else str(value)
