"""Batch's text work, in this process or in several: a site's pages are always signed by one.

Most of a page's cost is text work (extraction, the boilerplate learner, shingles, minhash), and it
parallelises by site, as the stream's site partitions do: the learner keeps what it learns per
site, so a process that reads every page of its sites, in the file's order, learns for each page
what one process would have learnt. Deciding needs the whole window in one order, and stays in
the calling process. So the decisions do not depend on how many processes sign, only the speed.

:class:`InlineSigners` signs in the calling process when a batch is asked for; :class:`SigningPool`
hands each batch to its processes at once and lets them work while the caller decides the batch
before. Either way a batch is signed by :meth:`Deduplicator.prepare_and_sign`, as batch in one
process signs it: every page prepared (and learnt from) in order, then the batch signed at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from collections import deque
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, NoReturn, Protocol

from .core.dedup import Deduplicator
from .core.page import Page
from .core.prepare import SignedPage
from .errors import SettingsError

__all__ = ["InlineSigners", "Signers", "SigningPool", "available_cores", "signers"]

#: Seconds to wait for a signing process's answer between checks that it is still alive.
_POLL_SECONDS = 1.0
#: Seconds a signing process is given to stop once asked, before it is terminated.
_STOP_SECONDS = 10.0

Batch = tuple[Sequence[Page], Sequence[int | None]]  # pages and the clock each was read at


class Signers(Protocol):
    """Where a batch's pages are prepared and signed; batches come back in the order they went in."""

    #: batches that may be submitted beyond the one whose signed pages are asked for next
    ahead: int

    def submit(self, pages: Sequence[Page], clocks: Sequence[int | None]) -> None:
        """Hand over a batch of pages, each with the clock it was read at."""

    def signed(self) -> list[SignedPage]:
        """The oldest submitted batch, signed, its pages in the order they were submitted."""

    def close(self, *, learnt: bool = True) -> None:
        """Stop; with ``learnt``, the engine's learner then holds everything the pages signed
        taught (without, it may not: nothing is going to save or use it)."""


class InlineSigners:
    """Signs in the calling process, when a batch is asked for: the engine's own learner learns."""

    ahead = 0

    def __init__(self, engine: Deduplicator) -> None:
        self.engine = engine
        self._batches: deque[Batch] = deque()

    def submit(self, pages: Sequence[Page], clocks: Sequence[int | None]) -> None:
        self._batches.append((pages, clocks))

    def signed(self) -> list[SignedPage]:
        return self.engine.prepare_and_sign(*self._batches.popleft())

    def close(self, *, learnt: bool = True) -> None:
        self._batches.clear()


class SigningPool:
    """``jobs`` processes that prepare and sign pages, each site's pages always in the same one.

    The processes are forked from the caller, so each starts with the engine as it is, its learner
    included, at no cost. A site goes, when its first page comes, to the process given the fewest
    pages so far, and stays there. On :meth:`close` each process hands back what it knows of its
    sites, so that the engine's learner is then the one a single process would have (what a state
    file saves). A process that fails or dies makes the next call raise :class:`RuntimeError`
    with its reason: its sites cannot be signed elsewhere without what it had learnt.
    """

    ahead = 2  # batches signed in the processes while the caller decides the one before them

    def __init__(self, engine: Deduplicator, jobs: int) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be >= 1, got {jobs}")
        if "fork" not in multiprocessing.get_all_start_methods():
            raise SettingsError("jobs > 1 needs processes started by fork, which this system has not")
        self.engine = engine
        context = multiprocessing.get_context("fork")
        self._workers: list[_Worker] = []
        self._owner: dict[str, int] = {}  # site -> the process that signs its pages
        self._load = [0] * jobs  # pages given to each process
        self._places: deque[list[tuple[int, int]]] = deque()
        for stream in (sys.stdout, sys.stderr):  # or a child would write what they hold again
            stream.flush()
        # an interrupt waits until every process is started (and ignores it): none dies half-born
        interrupts = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pipes = [context.Pipe() for _ in range(jobs)]
            ends = [end for pair in pipes for end in pair]
            for shard, (_, theirs) in enumerate(pipes):  # every fork before any thread is started
                others = [end for end in ends if end is not theirs]
                self._workers.append(_Worker(context, shard, engine, theirs, others))
            for worker, (ours, theirs) in zip(self._workers, pipes, strict=True):
                theirs.close()
                worker.listen(ours)
        except BaseException:
            self._stop()
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, interrupts)

    def submit(self, pages: Sequence[Page], clocks: Sequence[int | None]) -> None:
        shards: list[list[tuple[Page, int | None]]] = [[] for _ in self._workers]
        places = []
        for page, clock in zip(pages, clocks, strict=True):
            shard = self._owner.get(page.site)
            if shard is None:
                shard = self._owner[page.site] = self._load.index(min(self._load))
            self._load[shard] += 1
            places.append((shard, len(shards[shard])))
            shards[shard].append((page, clock))
        self._places.append(places)
        for worker, items in zip(self._workers, shards, strict=True):
            worker.send(("sign", items))

    def signed(self) -> list[SignedPage]:
        places = self._places.popleft()
        results = _from_each(self._workers)
        return [results[shard][at] for shard, at in places]

    def close(self, *, learnt: bool = True) -> None:
        """With ``learnt``, bring the engine's learner up to date from every process (after the
        batches they are still signing, whose answers are dropped); then stop them. The learner
        changes only once every process has answered: all of it, or none."""
        try:
            learner = self.engine.learner
            if learnt and learner is not None and self._workers:
                for worker in self._workers:
                    worker.drain()
                    worker.send(("learnt", None))
                for parts in _from_each(self._workers):
                    learner.replace_sites(*parts)
        finally:
            self._stop()

    def _stop(self) -> None:
        for worker in self._workers:  # all asked first: they stop side by side
            worker.ask_to_stop()
        for worker in self._workers:
            worker.finish()
        self._workers = []


def _from_each(workers: list[_Worker]) -> list[Any]:
    """Each process's next answer; every one is read, even after one has failed, so that what is
    asked of them next is answered in step. The first failure is raised then."""
    answers: list[Any] = []
    failure: BaseException | None = None
    for worker in workers:
        try:
            answers.append(worker.receive())
        except RuntimeError as error:
            failure = failure or error
    if failure is not None:
        raise failure
    return answers


def signers(engine: Deduplicator, jobs: int) -> Signers:
    """The signers for ``jobs`` processes: the calling process alone for 1."""
    return InlineSigners(engine) if jobs == 1 else SigningPool(engine, jobs)


def available_cores() -> int:
    """The cores this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every system
        return os.cpu_count() or 1


class _Worker:
    """One signing process, and the threads that write its batches and read its answers as they
    come (so that neither side can block the other on a full pipe)."""

    def __init__(
        self,
        context: Any,
        shard: int,
        engine: Deduplicator,
        connection: Connection,
        others: list[Connection],
    ) -> None:
        self.name = f"stream-lsh-signer-{shard}"
        self.process: BaseProcess = context.Process(
            target=_serve, args=(connection, others, engine), name=self.name, daemon=True
        )
        self.process.start()
        self.connection: Connection | None = None
        self.unanswered = 0  # requests sent whose answers are not read yet
        self._answers: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._requests: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def listen(self, connection: Connection) -> None:
        """Talk to the process over ``connection``, writing to it and reading its answers in
        threads of their own: the caller never waits for the process to take a batch in."""
        self.connection = connection
        for target, role in ((self._read, "reader"), (self._write, "writer")):
            thread = threading.Thread(target=target, name=f"{self.name}-{role}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _read(self) -> None:
        assert self.connection is not None
        try:
            while True:
                self._answers.put(self.connection.recv_bytes())
        except (EOFError, OSError):
            self._answers.put(None)

    def _write(self) -> None:
        assert self.connection is not None
        while (data := self._requests.get()) is not None:
            try:
                self.connection.send_bytes(data)
            except OSError:  # it has gone: the reader says so to the next receive
                return

    def send(self, message: tuple[str, Any]) -> None:
        if not self.process.is_alive():
            self._gone()
        self._requests.put(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
        self.unanswered += 1

    def receive(self) -> Any:
        while True:
            try:
                data = self._answers.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                if not self.process.is_alive():
                    self._gone()
                continue
            if data is None:
                self._gone()
            self.unanswered -= 1
            kind, payload = pickle.loads(data)
            if kind == "failed":
                raise RuntimeError(f"{self.name} failed:\n{payload}")
            return payload

    def drain(self) -> None:
        """Read and drop the answers not read yet (batches that will not be decided)."""
        while self.unanswered:
            with contextlib.suppress(RuntimeError):  # a failed batch is dropped as well
                self.receive()

    def _gone(self) -> NoReturn:
        self.process.join(_POLL_SECONDS)
        self.unanswered = 0  # nothing more will come
        raise RuntimeError(f"{self.name} ended unexpectedly (exit code {self.process.exitcode})")

    def ask_to_stop(self) -> None:
        if self.connection is not None:
            self._requests.put(pickle.dumps(("stop", None)))
        self._requests.put(None)  # the writer thread ends once it has sent what it holds

    def finish(self) -> None:
        """Wait for the process to end (end it after a while), then for its threads, then close."""
        self.process.join(_STOP_SECONDS if self.connection is not None else 0)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(_STOP_SECONDS)
        for thread in self._threads:  # the process has gone: they see the end of the pipe
            thread.join(_STOP_SECONDS)
        if self.connection is not None:
            self.connection.close()


def _serve(connection: Connection, others: list[Connection], engine: Deduplicator) -> None:
    """A signing process: its copy of the engine (whose window it never uses) signs the batches it
    is sent, until asked to stop or its caller goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is its caller's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    for end in others:  # the other processes' pipes, and the caller's end of its own: a pipe
        end.close()  # whose other side has gone must read as ended
    # what it inherited (a loaded window, the learner) out of its collector's sight: scanned, every
    # page of that memory would be copied from the caller's
    gc.freeze()
    learner = engine.learner
    sites: set[str] = set()  # the sites whose pages it signed: what it knows better than its caller
    for kind, payload in _requests(connection):
        try:
            if kind == "sign":
                sites.update(page.site for page, _ in payload)
                pages = [page for page, _ in payload]
                signed = engine.prepare_and_sign(pages, [clock for _, clock in payload])
                answer: Any = [_for_deciding(page) for page in signed]
            elif kind == "learnt":
                assert learner is not None
                answer = (sites, *learner.parts_of(sites))
            else:
                return
            reply = ("ok", answer)
        except Exception:
            reply = ("failed", traceback.format_exc())
        connection.send_bytes(pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


def _for_deciding(page: SignedPage) -> SignedPage:
    """A signed page without the text deciding never reads (the stream's decide partition is not
    sent it either), so that it costs less to send back."""
    return dataclasses.replace(
        page, prepared=dataclasses.replace(page.prepared, text="", prose_spans=(), dropped_starts=())
    )


def _requests(connection: Connection) -> Iterator[tuple[str, Any]]:
    try:
        while True:
            yield pickle.loads(connection.recv_bytes())
    except (EOFError, OSError):
        return
