"""The one declaration of a setting, and the commands a setting can be a flag of."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

#: The commands whose flags a setting is, by kind (its ``STREAM_LSH_*`` variable applies to every
#: command): the engine's knobs, how a file of pages is read, the clients of Kafka, the stream.
ENGINE = ("dedup", "eval", "run", "worker")
FILES = ("dedup", "eval", "run", "produce")
CLIENTS = ("run", "worker", "topics", "produce", "tail", "status")
STREAM = ("run", "worker")
TOPICS = ("run", "worker", "topics")
COMMANDS = ("dedup", "eval", "tune", "run", "worker", "topics", "produce", "tail", "status")


def setting(
    default: Any,
    parse: Callable[[str], Any],
    help: str,
    commands: tuple[str, ...],
    *,
    shown: str | None = None,
    switch: str | None = None,
    flag: bool = True,
    help_for: Mapping[str, str] | None = None,
    engine: Callable[[Any], dict[str, Any]] | None = None,
) -> Any:
    """The one declaration of a setting; its name is the field's. From it come its
    ``STREAM_LSH_<NAME>`` variable, its ``--<name>`` flag on each of ``commands`` (none with
    ``flag`` False: a secret must not sit on a command line), its row in docs/settings.md and,
    for the engine's knobs, the :class:`DedupConfig` field of the same name (``engine``: the fields
    it becomes instead, from the settings group).

    Args:
        shown: the default as help shows it, when its value says too little ("chosen from ...").
        switch: the off form of a boolean flag (``no-boilerplate``); default ``no-<name>``.
        help_for: the help on some commands, where the setting means more there.
    """
    unknown = set(commands) - set(COMMANDS)
    assert not unknown, f"unknown commands {unknown}"
    return field(
        default=default,
        metadata={
            "parse": parse,
            "help": help,
            "commands": commands,
            "shown": shown,
            "switch": switch,
            "flag": flag,
            "help_for": dict(help_for or {}),
            "engine": engine,
        },
    )
