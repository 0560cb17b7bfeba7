"""The ``stream-lsh`` command line. Nothing imports it; it only wires flags to the rest.

One module per kind of command (files, the stream, brokers), the flags and files they share in
:mod:`.params`, and :func:`main`, which says every refusal in one line.
"""

from __future__ import annotations

import sys

import click

from ..errors import ExitCode
from . import batch_commands, broker_commands, stream_commands  # noqa: F401  (they add their commands)
from .group import cli

__all__ = ["cli", "main"]


def main() -> None:
    """The command line, with every refusal of click's (a flag, a file) said in one line that names
    the command's help, and the usage exit code."""
    try:
        cli(standalone_mode=False, prog_name="stream-lsh")
    except click.exceptions.Abort:
        click.echo("stream-lsh: aborted", err=True)
        sys.exit(ExitCode.USAGE)
    except click.exceptions.NoArgsIsHelpError as error:
        click.echo(error.format_message(), err=True)
        sys.exit(error.exit_code)
    except click.ClickException as error:
        context = getattr(error, "ctx", None)
        command = context.command_path if context is not None else "stream-lsh"
        hint = f" (see `{command} --help`)" if context is not None else ""
        click.echo(f"{command}: {error.format_message()}{hint}", err=True)
        sys.exit(error.exit_code)
