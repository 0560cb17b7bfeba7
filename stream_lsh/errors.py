"""Every error stream-lsh raises on purpose, in one tree, and the exit codes of its processes.

Why one tree: a caller (the CLI, a worker, code using the Python API) can tell stream-lsh's own
refusals from bugs with one ``except StreamLshError``, and each refusal says what to fix. The
exit codes live here too, so that the CLI, the worker and the tests that check a process's exit
status read them from one place.

    StreamLshError
    ├── SettingsError           a setting that cannot work (value, type, unknown name)
    ├── PageError               an input record that is not a page (it becomes a reject or dead letter)
    ├── StateMismatchError      stored state built with other parameters than the running ones
    ├── IncompleteStateError    a worker's copy of a partition's state lacks rows its changelog has
    ├── ProtocolError           a record on an internal topic that its stage cannot read
    ├── CorpusError             a synthetic corpus that cannot be made as asked
    └── BrokerError             Kafka cannot be used as needed
        ├── BrokerUnreachableError   no broker answers at the bootstrap address
        ├── BrokerAuthenticationError  the broker refused the credentials
        ├── TopicShapeError          a topic exists with other partitions or settings than needed
        └── BrokerProcessError       a broker process started here (tests, quick start) failed

Pure: no I/O, imported by the core as well as by the stream.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "BrokerAuthenticationError",
    "BrokerError",
    "BrokerProcessError",
    "BrokerUnreachableError",
    "CorpusError",
    "ExitCode",
    "IncompleteStateError",
    "PageError",
    "ProtocolError",
    "SettingsError",
    "StateMismatchError",
    "StreamLshError",
    "TopicShapeError",
]


class ExitCode(IntEnum):
    """Exit statuses of ``stream-lsh`` commands and workers (sysexits.h where one fits)."""

    OK = 0
    REJECTED = 1  # the run finished, but some input lines were rejected
    USAGE = 2  # a flag, a setting, the broker or stored state needs fixing; nothing was done
    UNAVAILABLE = 69  # EX_UNAVAILABLE: `status` found no worker up (none reported lately)
    FAILED_BATCH = 70  # EX_SOFTWARE: a batch could not be completed; its input will be redelivered
    STATE_MISMATCH = 78  # EX_CONFIG: a worker found stored state built with other parameters, or incomplete


class StreamLshError(Exception):
    """Base of every error stream-lsh raises on purpose."""


class SettingsError(StreamLshError, ValueError):
    """A setting (flag or ``STREAM_LSH_*`` variable) that cannot work; the message names it."""


class PageError(StreamLshError, ValueError):
    """An input record that is not a valid page, with the short machine-friendly ``code`` that its
    reject or dead letter carries."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class StateMismatchError(StreamLshError, ValueError):
    """Stored state (an index, a state file, a worker's tables, a topic's guard record) was built
    with other parameters than the running ones: probing it would give wrong answers silently."""


class IncompleteStateError(StreamLshError, ValueError):
    """A worker's local copy of a stage partition's rows lacks some that the partition's changelog
    holds (a disk fault, a copy cut short, records a standby copy missed). The rows are a cache of
    the changelog, so a worker restores the partition from it; this is raised to the worker only
    when the changelog lacks them too."""


class ProtocolError(StreamLshError, ValueError):
    """A record on an internal topic (or in a journal) that its stage cannot read: a kind that
    stage never receives, or a record missing a field. Only a routing bug or another program
    writing to the app's internal topics makes one."""


class BrokerError(StreamLshError):
    """Kafka cannot be used as stream-lsh needs it."""


class BrokerUnreachableError(BrokerError):
    """No broker answered at the bootstrap address."""


class BrokerAuthenticationError(BrokerError):
    """The broker answered and refused the credentials: retrying will not help."""


class TopicShapeError(BrokerError):
    """A topic exists with other partitions or settings than stream-lsh needs."""


class BrokerProcessError(BrokerError):
    """A broker process started by stream-lsh (embedded Tansu, or Apache Kafka for the tests) failed."""


class CorpusError(StreamLshError, ValueError):
    """A synthetic corpus that cannot be made as asked: more pages than the real prose holds, or
    the real prose could not be fetched from the package index."""
