"""What every command shares: files to read and write, the flags of the settings, one line per mistake."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import IO, Any

import click

from ..batch import RejectSink
from ..core.dedup import Deduplicator
from ..errors import ExitCode, SettingsError, StreamLshError
from ..settings import EXPLICIT_NONE, Settings
from ..signing import available_cores

__all__ = [
    "AsVariable",
    "InputFile",
    "OutputFile",
    "UserError",
    "batch_engine",
    "check_state_path",
    "distinct",
    "first_line",
    "load_settings",
    "open_output",
    "progress_bar",
    "read_input",
    "rejects_option",
    "report_rejects",
    "settings_options",
    "stream_errors",
    "write_output",
]


class AsVariable(click.ParamType):
    """A flag read exactly as its ``STREAM_LSH_*`` variable is (e.g. ``none`` for no bound)."""

    name = "value"

    def __init__(self, setting: str) -> None:
        self.setting = setting

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            parsed = Settings.parse(self.setting, value) if isinstance(value, str) else value
            return EXPLICIT_NONE if parsed is None else parsed
        except ValueError as error:
            self.fail(str(error), param, ctx)


def settings_options(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The flags of every setting declared for ``command`` (:mod:`stream_lsh.settings`: name,
    help, default and the commands each applies to are declared there once). An unset flag falls
    back to its STREAM_LSH_* variable, then to the default."""

    def option(name: str) -> Callable[..., Any]:
        spec = Settings.spec(name)
        flag = f"--{name.replace('_', '-')}"
        text = Settings.help_on(name, command)
        if isinstance(spec.default, bool):
            off = spec.metadata["switch"] or f"no-{name.replace('_', '-')}"
            return click.option(f"{flag}/--{off}", default=None, help=text)
        if isinstance(spec.default, Enum):
            choices = [str(member.value) for member in type(spec.default)]
            return click.option(flag, type=click.Choice(choices, case_sensitive=False), help=text)
        return click.option(flag, type=AsVariable(name), metavar=_metavar(str(spec.type)), help=text)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(Settings.for_command(command)):
            function = option(name)(function)
        return function

    return decorate


def _metavar(annotation: str) -> str:
    """From the setting's declared type (``int | None`` is an INTEGER that may be none)."""
    kind = annotation.split("|")[0].strip()
    return {"int": "INTEGER", "float": "NUMBER"}.get(kind, "TEXT")


def load_settings(flags: dict[str, Any]) -> Settings:
    try:
        return Settings.load(**flags)
    except SettingsError as error:
        raise click.UsageError(str(error)) from None


def batch_engine(settings: Settings) -> Deduplicator:
    """The batch engine, reading its files with ``--now``'s clock or their own."""
    engine = Deduplicator(settings.dedup_config())
    engine.file_clock = settings.file_clock()
    return engine


def signing_jobs(settings: Settings) -> int:
    """The processes that sign a file's pages (``--jobs``; 0: one per core)."""
    return settings.input.jobs or available_cores()


class UserError(click.ClickException):
    """A mistake of the user's found once running: one line, and the usage exit code."""

    exit_code = ExitCode.USAGE


class InputFile(click.ParamType):
    """A file to read ('-' for stdin where ``stdin``): refused at once, in one line, when it is
    missing, a directory or unreadable, rather than with a traceback once the work has begun."""

    name = "file"

    def __init__(self, stdin: bool = False, holds: str = "a file of JSON lines") -> None:
        self.stdin, self.holds = stdin, holds

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "-" and self.stdin:
            return value
        path = Path(value)
        if path.is_dir():
            self.fail(f"{value} is a directory; give {self.holds}", param, ctx)
        if not path.exists():
            self.fail(f"no such file: {value}", param, ctx)
        if not os.access(path, os.R_OK):
            self.fail(f"cannot read {value}: permission denied", param, ctx)
        return value


class OutputFile(click.ParamType):
    """A file to write ('-' for stdout): its directory must exist and be writable, checked before
    any work, so that a typo in a path does not cost a whole run."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "-":
            return value
        path = Path(value)
        folder = path.parent
        if path.is_dir():
            self.fail(f"{value} is a directory; give a file name", param, ctx)
        if not folder.is_dir():
            self.fail(f"cannot write {value}: there is no directory {folder}; create it first", param, ctx)
        if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            self.fail(f"cannot write {value}: permission denied", param, ctx)
        return value


def rejects_option(what: str) -> Callable[..., Any]:
    return click.option(
        "--rejects",
        type=OutputFile(),
        default="rejects.jsonl",
        show_default=True,
        help=f"{what}, one JSON line each with line number and reason; created only if there are any.",
    )


def open_output(path: str) -> IO[bytes]:
    """A file checked by :class:`OutputFile`; should it fail even so (a disk full, a directory
    removed meanwhile), one line and the usage exit code."""
    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror}") from None


def distinct(reads: dict[str, str | None], writes: dict[str, str | None]) -> None:
    """Refuse, before any work, an output that is one of the inputs (it would be emptied before
    it is read) or another output: ``{flag: path}`` of what is read and what is written."""

    def same(a: str, b: str) -> bool:
        try:
            return os.path.samefile(a, b)
        except OSError:  # not there yet: the same name is the same file
            return os.path.abspath(a) == os.path.abspath(b)

    written = [(flag, path) for flag, path in writes.items() if path not in (None, "-")]
    for index, (flag, path) in enumerate(written):
        assert path is not None
        for other, read in reads.items():
            if read not in (None, "-") and same(path, read):
                raise click.UsageError(
                    f"{flag} {path} is {other} itself: it would be emptied before it is read"
                )
        for other, also in written[index + 1 :]:
            assert also is not None
            if same(path, also):
                raise click.UsageError(f"{flag} and {other} are both {path}: give each its own file")


def first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def report_rejects(sink: RejectSink, path: str) -> None:
    """The line every command that rejects input ends with, and its exit status."""
    if sink.written:
        click.echo(f"{sink.written:,} line(s) rejected: see {path}", err=True)
        sys.exit(ExitCode.REJECTED)


@contextlib.contextmanager
def read_input(path: str) -> Iterator[tuple[IO[bytes], int | None]]:
    if path == "-":
        yield sys.stdin.buffer, None
        return
    file = Path(path)
    with file.open("rb") as handle:
        yield handle, file.stat().st_size


@contextlib.contextmanager
def write_output(path: str | None) -> Iterator[IO[bytes] | None]:
    if path is None:
        yield None
    elif path == "-":
        yield sys.stdout.buffer
    else:
        with open_output(path) as handle:
            yield handle


def check_state_path(state: str) -> None:
    """Fail before the run, not after it, if the state could not be saved."""
    folder = Path(state).resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise click.UsageError(f"cannot save state to {state}: {folder} is not a writable directory")


def progress_bar(total: int | None, enabled: bool | None) -> Any:
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    return tqdm(total=total, unit="B", unit_scale=True, disable=not show, file=sys.stderr, desc="dedup")


@contextlib.contextmanager
def stream_errors(logged: bool = False) -> Iterator[None]:
    """Errors a user can fix (broker address, topic shapes, parameters of stored state): one line
    and exit code 2, not a traceback. ``logged``: the line goes through the log (a worker whose
    log is JSON, so that the line a log pipeline gets about the refusal parses like the others)."""
    try:
        yield
    except StreamLshError as error:
        if logged:
            logging.getLogger("stream_lsh").critical("refusing to run: %s", error)
            logging.shutdown()
        else:
            click.echo(f"stream-lsh: {error}", err=True)
        # said in one line: the clients' attempts still unfinished at exit would log it again
        # (asyncio: "Future exception was never retrieved", with a traceback)
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        sys.exit(ExitCode.USAGE)
