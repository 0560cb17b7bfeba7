"""The ``stream-lsh`` command line. Nothing imports this module; it only wires flags to the rest."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from typing import IO, Any

import click
import numpy as np
import orjson

from .batch import DecisionRecords, RejectSink, SpreadAlerts, run_batch
from .core.banding import error_rates, s_curve
from .core.dedup import Deduplicator
from .core.record import split_lines
from .core.spread import SpreadTracker
from .errors import ExitCode, SettingsError, StreamLshError
from .gc_policy import tune_gc
from .settings import EXPLICIT_NONE, LogFormat, SecurityProtocol, Settings
from .state import load_state, save_state


class _AsVariable(click.ParamType):
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


def _settings_options(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
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
        return click.option(flag, type=_AsVariable(name), metavar=_metavar(str(spec.type)), help=text)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(Settings.for_command(command)):
            function = option(name)(function)
        return function

    return decorate


def _metavar(annotation: str) -> str:
    """From the setting's declared type (``int | None`` is an INTEGER that may be none)."""
    kind = annotation.split("|")[0].strip()
    return {"int": "INTEGER", "float": "NUMBER"}.get(kind, "TEXT")


def _settings(flags: dict[str, Any]) -> Settings:
    try:
        return Settings.load(**flags)
    except SettingsError as error:
        raise click.UsageError(str(error)) from None


def _engine(settings: Settings) -> Deduplicator:
    """The batch engine, reading its files with ``--now``'s clock or their own."""
    engine = Deduplicator(settings.dedup_config())
    engine.file_clock = settings.file_clock()
    return engine


class _UserError(click.ClickException):
    """A mistake of the user's found once running: one line, and the usage exit code."""

    exit_code = ExitCode.USAGE


class _InputFile(click.ParamType):
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


class _OutputFile(click.ParamType):
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


def _rejects_option(what: str) -> Callable[..., Any]:
    return click.option(
        "--rejects",
        type=_OutputFile(),
        default="rejects.jsonl",
        show_default=True,
        help=f"{what}, one JSON line each with line number and reason; created only if there are any.",
    )


def _open_output(path: str) -> IO[bytes]:
    """A file checked by :class:`_OutputFile`; should it fail even so (a disk full, a directory
    removed meanwhile), one line and the usage exit code."""
    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as error:
        raise _UserError(f"cannot write {path}: {error.strerror}") from None


def _distinct(reads: dict[str, str | None], writes: dict[str, str | None]) -> None:
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


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _report_rejects(sink: RejectSink, path: str) -> None:
    """The line every command that rejects input ends with, and its exit status."""
    if sink.written:
        click.echo(f"{sink.written:,} line(s) rejected: see {path}", err=True)
        sys.exit(ExitCode.REJECTED)


@contextlib.contextmanager
def _input(path: str) -> Iterator[tuple[IO[bytes], int | None]]:
    if path == "-":
        yield sys.stdin.buffer, None
        return
    file = Path(path)
    with file.open("rb") as handle:
        yield handle, file.stat().st_size


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[IO[bytes] | None]:
    if path is None:
        yield None
    elif path == "-":
        yield sys.stdout.buffer
    else:
        with _open_output(path) as handle:
            yield handle


def _check_state_path(state: str) -> None:
    """Fail before the run, not after it, if the state could not be saved."""
    folder = Path(state).resolve().parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise click.UsageError(f"cannot save state to {state}: {folder} is not a writable directory")


def _progress(total: int | None, enabled: bool | None) -> Any:
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    return tqdm(total=total, unit="B", unit_scale=True, disable=not show, file=sys.stderr, desc="dedup")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="stream-lsh")
def cli() -> None:
    """Near-duplicate detection for news pages: stop-word shingles, minhash and LSH (MMDS ch. 3).

    Every engine flag can also be set as STREAM_LSH_<FLAG> (e.g. STREAM_LSH_THRESHOLD=0.6).
    """


@cli.command()
@click.argument("pages", default="-", type=_InputFile(stdin=True))
@click.option(
    "-o",
    "--output",
    "output",
    default="-",
    type=_OutputFile(),
    help="Decisions, one JSON line per page [stdout].",
)
@click.option(
    "--unique-out", type=_OutputFile(), help="Write the input line of every page judged unique here."
)
@_rejects_option("Rejected lines")
@click.option(
    "--state",
    type=click.Path(dir_okay=False),
    help="Index state file: loaded first if it exists, saved at the end (continue across runs). It "
    "keeps the clusters' spread too, so alerts of later runs count earlier pages and never repeat.",
)
@click.option(
    "--alerts",
    "alerts_path",
    type=_OutputFile(),
    help="Write story-spread alerts here, one JSON line each, in the order they fire: a cluster "
    "reaching a level of --alert-levels within --alert-within-hours of event time.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar [on when stderr is a terminal].")
@_settings_options("dedup")
def dedup(
    pages: str,
    output: str,
    unique_out: str | None,
    rejects: str,
    state: str | None,
    alerts_path: str | None,
    progress: bool | None,
    **flags: Any,
) -> None:
    """Decide, for each page of PAGES (JSON lines, '-' for stdin), whether it repeats an earlier one.

    \b
    Writes one decision per page, in input order, as a JSON line:
      id, status          unique | duplicate | no_content
      cluster_id          the cluster the page is in (a unique page founds its own)
      duplicate_of        the earlier page it repeats (duplicates)
      similarity          Jaccard similarity to that page (or to the closest candidate)
      candidates          pages that shared a band with it
      match               which measure made it a duplicate: jaccard | containment
      containment         how much of the smaller page lies in the larger
      date_ignored        why its published_at was not used (only when it was not)
    Ends with a summary line and any warnings on stderr. Exit status 1 if any line was rejected
    (see --rejects), 2 for a usage error.
    """
    _distinct(
        {"PAGES": pages, "--state": state},
        {"-o": output, "--unique-out": unique_out, "--rejects": rejects, "--alerts": alerts_path},
    )
    settings = _settings(flags)
    if alerts_path == "-" and output == "-":
        raise click.UsageError("--alerts - and the decisions cannot both go to stdout: give -o or a file")
    engine = _engine(settings)
    tune_gc()
    # the spread is followed for --alerts, and with --state always, so that the file stays whole
    tracker = SpreadTracker(settings.engine.alert_rules()) if alerts_path or state else None
    if state is not None:
        _check_state_path(state)
        if Path(state).exists():
            try:
                load_state(engine, state, spread=tracker)
            except (StreamLshError, ValueError, OSError) as error:
                raise click.UsageError(f"cannot use state file {state}: {error}") from None
    sink = RejectSink(lambda: _open_output(rejects))
    with (
        _input(pages) as (source, size),
        _output(output) as out,
        _output(unique_out) as uniques,
        _output(alerts_path) as alerts_out,
    ):
        assert out is not None
        with _progress(size, progress) as bar:
            summary = run_batch(
                source,
                engine,
                out=out,
                rejects=sink,
                unique_out=uniques,
                alerts=None if tracker is None else SpreadAlerts(tracker, alerts_out),
                max_page_bytes=settings.input.max_page_bytes,
                on_line=bar.update,
            )
        out.flush()
    sink.close()
    if state is not None:
        save_state(engine, state, spread=tracker)
    click.echo(summary.format(), err=True)
    for warning in summary.warnings():
        click.echo(f"warning: {warning}", err=True)
    _report_rejects(sink, rejects)


@cli.command()
@_settings_options("tune")
def tune(**flags: Any) -> None:
    """Show the LSH bands b and rows r the engine uses for these settings, and their S-curve.

    With containment on (the default), the bands must also catch a teaser a quarter of its
    story's size, whose Jaccard similarity is far below the threshold: they are chosen for that
    lower similarity, the "reach".
    """
    settings = _settings(flags)
    config = settings.dedup_config()
    banding = config.banding()
    reach = config.verification().lowest_jaccard()
    containment = "none" if config.containment is None else f"{config.containment:g}"
    click.echo(
        f"threshold {config.threshold:g}  containment {containment}  num_perm {config.num_perm}  "
        f"fp_weight {config.fp_weight:g}  fn_weight {config.fn_weight:g}"
    )
    chosen = "given" if config.bands is not None else f"chosen for a reach of Jaccard {reach:.3f}"
    click.echo(
        f"bands b = {banding.bands}, rows r = {banding.rows} "
        f"(b*r = {banding.bands * banding.rows} of {config.num_perm} values; {chosen})"
    )
    fp_rate, fn_rate = error_rates(reach, banding.bands, banding.rows)
    click.echo(f"approximate threshold (1/b)^(1/r) = {banding.threshold:.3f}")
    click.echo(f"expected false-positive rate {fp_rate:.4f} (pairs below the reach that become candidates)")
    click.echo(f"expected false-negative rate {fn_rate:.4f} (pairs at or above the reach that do not)")
    click.echo("  (rates assume pair similarities spread evenly over [0, 1])")
    click.echo("similarity  P(candidate)")
    for s in np.round(np.arange(0.05, 1.0001, 0.05), 2):
        marks = [
            name for name, at in (("reach", reach), ("threshold", config.threshold)) if abs(s - at) < 0.025
        ]
        marker = f"  <- {', '.join(marks)}" if marks else ""
        click.echo(f"   {s:4.2f}     {float(s_curve(s, banding.bands, banding.rows)):.4f}{marker}")


def _hard_case_share(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A generator share flag, refused by the generator's own bound (so the flag and the API agree)."""
    from .synthetic import MAX_HARD_CASE_SHARE

    if not 0.0 <= value <= MAX_HARD_CASE_SHARE:
        raise click.BadParameter(f"must be a share from 0 to {MAX_HARD_CASE_SHARE}, got {value}")
    return value


def _spreading_count(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """The count of spreading stories, refused by the generator's own bound."""
    from .synthetic import MAX_SPREADING

    if not 0 <= value <= MAX_SPREADING:
        raise click.BadParameter(f"must be a number of stories from 0 to {MAX_SPREADING}, got {value}")
    return value


@cli.command()
@click.option("--pages", "count", type=click.IntRange(min=1), required=True, help="Number of pages.")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed; the same seed gives the same pages."
)
@click.option("-o", "--output", required=True, type=_OutputFile(), help="Pages as JSON lines.")
@click.option(
    "--labels",
    required=True,
    type=_OutputFile(),
    help="True clusters as a JSON object {page id: cluster label}.",
)
@click.option(
    "--messy-dates",
    is_flag=True,
    help="Model a real feed: pages in arrival order (crawl delays, re-crawls days late), dates "
    "in mixed formats (ISO with and without offset, RSS, epoch numbers, bare days), some "
    "hours ahead, missing, unreadable or in a wrong year. Same pages and labels as without.",
)
@click.option(
    "--teasers",
    type=float,
    default=0.0,
    show_default=True,
    callback=_hard_case_share,
    metavar="SHARE",
    help="Share of pages (0 to 0.5) that are teasers: an RSS item or a partner's excerpt holding the "
    "first 25-40% of an earlier copy of a story (whole sentences), often at another outlet. Labelled "
    "as that story: duplicates to catch.",
)
@click.option(
    "--quotes",
    type=float,
    default=0.0,
    show_default=True,
    callback=_hard_case_share,
    metavar="SHARE",
    help="Share of pages (0 to 0.5) that quote a long passage of an earlier story (35-50% of their "
    "words, 20-30% for a third of them) inside text of their own. Each is a story with its own "
    "label: NOT a duplicate of the story it quotes.",
)
@click.option(
    "--short-stories",
    type=float,
    default=0.0,
    show_default=True,
    callback=_hard_case_share,
    metavar="SHARE",
    help="Share of stories (0 to 0.5) only 60-100 words long, rather than about 150 or 800.",
)
@click.option(
    "--spreading",
    type=int,
    default=0,
    callback=_spreading_count,
    show_default=True,
    metavar="N",
    help="Stories that spread: N wire stories, each copied by many outlets within 4 hours, by turns "
    "enough for 30, 10 and 3 distinct sources (the default alert levels: see dedup --alerts). "
    "Labelled w00000, w00001...",
)
@click.option(
    "--prose",
    type=click.Choice(["pseudo", "real"]),
    default="pseudo",
    show_default=True,
    help="pseudo: pseudo-words in 8 languages, any number of pages. real: real English news "
    "articles (the Lee corpus in the gensim wheel, fetched from PyPI with pip on first use into "
    "~/.cache/stream-lsh/prose), about 600 pages at most.",
)
@click.option(
    "--shape",
    "shapes",
    multiple=True,
    metavar="SHAPE",
    help="A page shape real feeds send (repeat for several): one-line (the article on one line), "
    "fixed-list or rotating-list (a list of 8 headlines in the body), div-only (HTML of <div>s "
    "alone), trimmed (copies keep 55-100% of a story), cold-sites (each site's first pages first).",
)
def generate(
    count: int,
    seed: int,
    output: str,
    labels: str,
    messy_dates: bool,
    teasers: float,
    quotes: float,
    short_stories: float,
    spreading: int,
    prose: str,
    shapes: tuple[str, ...],
) -> None:
    """Generate synthetic news pages with known duplicate clusters (for eval and benchmarks)."""
    from .synthetic import Shapes, generate_corpus_with_truth, write_corpus

    _distinct({}, {"-o": output, "--labels": labels})
    try:
        shaped = Shapes.parse(shapes)
        corpus, truth = generate_corpus_with_truth(
            count,
            seed,
            messy_dates=messy_dates,
            teasers=teasers,
            quotes=quotes,
            short_stories=short_stories,
            spreading=spreading,
            prose=prose,
            shapes=shaped,
        )
    except (StreamLshError, ValueError) as error:
        raise click.UsageError(str(error)) from None
    write_corpus(corpus, output, labels)
    clusters = sum(1 for size in Counter(corpus.labels.values()).values() if size > 1)
    order = " in arrival order with messy dates" if messy_dates else ""
    kinds = Counter(page.kind for page in truth.values())
    hard = f"; {kinds['teaser']:,} teasers, {kinds['quote']:,} quoting pages" if teasers or quotes else ""
    if spreading:
        spread = Counter(page.label for page in truth.values() if page.spreading)
        sizes = ", ".join(str(size) for size in spread.values())
        hard += f"; {len(spread):,} spreading stories of {sizes} pages"
    click.echo(
        f"wrote {len(corpus.pages):,} pages to {output}{order} ({clusters:,} clusters with copies{hard}); "
        f"labels in {labels}",
        err=True,
    )


@cli.command(name="eval")
@click.argument("pages", type=_InputFile(stdin=True))
@click.argument("labels", type=_InputFile(holds="a JSON file of labels"))
@click.option("--json", "as_json", is_flag=True, help="Print the scores as one JSON object.")
@_rejects_option("Rejected lines (scored as pages of their own)")
@click.option(
    "--decisions",
    "decisions_file",
    type=_InputFile(),
    help="Score these decisions (e.g. `run -o`'s) instead of running dedup on PAGES.",
)
@_settings_options("eval")
def evaluate(
    pages: str, labels: str, as_json: bool, rejects: str, decisions_file: str | None, **flags: Any
) -> None:
    """Score clusters against LABELS (pairwise precision, recall, F1, ARI): those of a dedup run on
    PAGES, or those of a decisions file (--decisions).

    \b
    LABELS is one JSON object mapping every page id of PAGES to the name of its true cluster:
      {"page-1": "story-a", "page-2": "story-a", "page-3": "story-b"}
    Pages with the same name are copies of one story; the names themselves do not matter.
    `stream-lsh generate --labels` writes such a file.
    """
    from .evaluation import pair_scores, predicted_clusters
    from .synthetic import load_labels

    _distinct({"PAGES": pages, "LABELS": labels, "--decisions": decisions_file}, {"--rejects": rejects})
    try:
        truth = load_labels(labels)
    except ValueError as error:  # orjson's JSONDecodeError is one
        text = _first_line(error)
        raise click.BadParameter(
            text if text.startswith(labels) else f"{labels}: {text}", param_hint="LABELS"
        ) from None
    summary = None
    if decisions_file is not None:
        try:
            with open(decisions_file, "rb") as handle:
                records = [orjson.loads(line) for line in handle if line.strip()]
        except orjson.JSONDecodeError as error:
            raise click.BadParameter(
                f"{decisions_file}: not JSON lines of decisions ({error})", param_hint="--decisions"
            ) from None
    else:
        settings = _settings(flags)
        engine = _engine(settings)
        decisions = DecisionRecords()
        sink = RejectSink(lambda: _open_output(rejects))
        with _input(pages) as (source, _):
            summary = run_batch(
                source, engine, out=decisions, rejects=sink, max_page_bytes=settings.input.max_page_bytes
            )
        sink.close()
        records = decisions.records
    predicted = predicted_clusters(records, truth)
    decided = {str(record["id"]) for record in records}
    scored = "the decisions" if decisions_file else pages
    unlabelled = sorted(decided - truth.keys())
    if unlabelled:
        raise click.UsageError(
            f"{labels} labels other pages than {scored}: {len(unlabelled):,} of the {len(decided):,} "
            f"pages decided have no label (e.g. {', '.join(unlabelled[:3])}); LABELS must name every "
            "page scored"
        )
    seen = decided | (set() if summary is None else sink.ids)  # a rejected page is still a page
    unseen = sorted(truth.keys() - seen)
    if truth and len(unseen) == len(truth):
        raise click.UsageError(
            f"none of the {len(truth):,} pages {labels} labels is in {scored}: is that the right file?"
        )
    if unseen:
        click.echo(
            f"warning: {len(unseen):,} of the {len(truth):,} pages {labels} labels are not in {scored} "
            f"(e.g. {', '.join(unseen[:3])}): they are scored as pages of their own, which lowers "
            "recall; score the whole file the labels were made for",
            err=True,
        )
    scores = pair_scores(truth, predicted)
    if as_json:
        extra = {} if summary is None else {"pages_per_second": summary.pages_per_second}
        click.echo(orjson.dumps({**scores.__dict__, **extra}).decode())
    else:
        click.echo(
            f"pages {scores.pages:,}  true pairs {scores.true_pairs:,}  "
            f"predicted pairs {scores.predicted_pairs:,}"
        )
        click.echo(
            f"precision {scores.precision:.4f}  recall {scores.recall:.4f}  F1 {scores.f1:.4f}  "
            f"ARI {scores.ari:.4f}"
        )
    if summary is not None:
        click.echo(summary.format(), err=True)
        _report_rejects(sink, rejects)


@contextlib.contextmanager
def _stream_errors(logged: bool = False) -> Iterator[None]:
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


@cli.command()
@_settings_options("worker")
def worker(**flags: Any) -> None:
    """Run one stream worker against an existing broker (start several for more throughput).

    Stops cleanly on SIGTERM or Ctrl-C.
    """
    from .stream.worker import run_worker

    settings = _settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("a worker needs a broker: --broker host:port or STREAM_LSH_BROKER")
    with _stream_errors(logged=settings.stream.log_format is LogFormat.JSON):
        run_worker(settings, settings.stream.broker)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print the topics as JSON lines; do not connect.")
@_settings_options("topics")
def topics(dry_run: bool, **flags: Any) -> None:
    """Create every topic the app uses (workers do it too; run this first on a real cluster, with
    STREAM_LSH_REPLICATION_FACTOR set), and check the shape of those that exist."""
    import asyncio

    from .stream.admin import ensure_topics
    from .stream.connection import KafkaConnection
    from .stream.topics import topic_specs

    settings = _settings(flags)
    specs = topic_specs(settings)
    if dry_run:
        for spec in specs:
            click.echo(
                orjson.dumps(
                    {
                        "name": spec.name,
                        "partitions": spec.partitions,
                        "replication_factor": spec.replication,
                        "config": spec.config,
                    }
                ).decode()
            )
        return
    if not settings.stream.broker:
        raise click.UsageError("creating topics needs a broker: --broker host:port or STREAM_LSH_BROKER")
    with _stream_errors():
        created = asyncio.run(ensure_topics(KafkaConnection.from_settings(settings), specs))
    click.echo(f"{len(created)} of {len(specs)} topics created: {', '.join(created) or 'none'}", err=True)


@cli.command(name="fetch-kafka")
@click.option(
    "--tools",
    is_flag=True,
    help="Also fetch Kafka's command-line tools (console producer and consumer, topics, consumer "
    "groups) and print how to run them.",
)
def fetch_kafka(tools: bool) -> None:
    """Fetch the Apache Kafka broker (its jars, from Maven Central, with mvn) into the cache.

    For `broker --kind kafka`, `run --embedded kafka` and the test suite; prints where the jars are.
    Needs Maven and, to run the broker, Java 17 or newer. STREAM_LSH_KAFKA_CACHE sets the cache
    [~/.cache/stream-lsh].
    """
    from .stream.brokers import KAFKA_VERSION, fetch_tools, find_kafka, find_tools
    from .stream.brokers import fetch_kafka as fetch

    with _stream_errors():
        cached = find_kafka()
        distribution = cached or fetch(quiet=False)
    verb = "already in" if cached else "fetched into"
    click.echo(f"Apache Kafka {KAFKA_VERSION} {verb} {distribution.libs}", err=True)
    if tools:
        with _stream_errors():
            had = find_tools()
            kit = had or fetch_tools(quiet=False)
        verb = "already in" if had else "fetched into"
        click.echo(f"Kafka's tools {verb} {kit.libs}; run one with:", err=True)
        for main_class, example in _KAFKA_TOOLS:
            click.echo(f'  java -cp "{kit.classpath}" {main_class} {example}', err=True)


#: Kafka's tools a user reaches for first, with an example of each against `stream-lsh broker`.
_KAFKA_TOOLS = (
    (
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server 127.0.0.1:9092 --topic pages < pages.jsonl",
    ),
    (
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server 127.0.0.1:9092 --topic dedup-decisions --from-beginning",
    ),
    ("org.apache.kafka.tools.TopicCommand", "--bootstrap-server 127.0.0.1:9092 --list"),
    (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server 127.0.0.1:9092 --describe --all-groups",
    ),
)


@cli.command()
@click.option(
    "--kind",
    type=click.Choice(["tansu", "kafka"]),
    default="tansu",
    show_default=True,
    help="Tansu (no Java, memory only) or Apache Kafka (needs Java 17+; fetched with Maven on first use).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=9092, show_default=True, help="Client port.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="Kafka only: keep the broker's data here, across restarts [a temporary directory, removed at exit].",
)
def broker(kind: str, port: int, data_dir: str | None) -> None:
    """Run a single-node broker on this machine until Ctrl-C, to try the stream out or to develop
    against: prints its bootstrap address (for --broker or STREAM_LSH_BROKER).

    It listens on 127.0.0.1 only and keeps one copy of everything: a real deployment runs a Kafka
    cluster (see docs/operating.md).
    """
    import signal
    import socket
    import time

    from .stream.brokers import embedded_broker

    if kind == "tansu" and data_dir is not None:
        raise click.UsageError("Tansu keeps its data in memory: --data-dir is for --kind kafka")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise click.UsageError(f"port {port} is in use (another broker?): choose another with --port")
    started = embedded_broker(kind, port=port, data_dir=data_dir)
    for stop in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a shell starts background jobs ignoring it
        signal.signal(stop, signal.default_int_handler)
    try:
        with _stream_errors():
            started.start()
        name = "Apache Kafka" if kind == "kafka" else "Tansu"
        kept = f", data in {data_dir}" if data_dir else ", data discarded at exit"
        click.echo(f"{name} broker at {started.bootstrap}{kept}; Ctrl-C stops it", err=True)
        click.echo(started.bootstrap)
        sys.stdout.flush()
        while started.running:
            time.sleep(0.5)
        raise _UserError(f"the {name} broker exited by itself; its log ends with:\n{started.log_tail()}")
    except KeyboardInterrupt:
        click.echo("stopping the broker", err=True)
    finally:
        started.stop()
        if data_dir is None:
            started.cleanup()


@cli.command()
@click.option(
    "--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Worker processes to start."
)
@click.option("--feed", "feed", type=_InputFile(), help="JSON lines of pages to send in.")
@click.option("--rate", type=float, help="Pages per second to feed at [as fast as possible].")
@click.option(
    "--until-idle", is_flag=True, help="Exit once every fed page has its decision (or a dead letter)."
)
@click.option(
    "-o",
    "--output",
    "output",
    type=_OutputFile(),
    help="With --until-idle: the final decision per page, one JSON line each, in feed order.",
)
@click.option(
    "--alerts",
    "alerts_out",
    type=_OutputFile(),
    help="With --until-idle: the story-spread alerts from the alerts topic, one JSON line each, in the "
    "order they came (it waits until the workers report every alert of the fed pages out).",
)
@click.option(
    "--dead-letters",
    "dead_letters_out",
    type=_OutputFile(),
    help="Write the dead letters read during the run here, one JSON line each, when it ends (they "
    "are lost with an embedded broker).",
)
@_rejects_option("Fed lines the input topic cannot take (over --max-message-bytes)")
@click.option("--quiet", is_flag=True, help="Print only the final summary: no decisions, no status lines.")
@click.option(
    "--embedded",
    type=click.Choice(["tansu", "kafka"]),
    default=None,
    help="Without --broker, the broker to start: Tansu (no Java) or Apache Kafka (needs Java 17+; "
    "its jars are fetched with Maven on first use, as `stream-lsh fetch-kafka` does) [tansu].",
)
@_settings_options("run")
def run(
    workers: int,
    feed: str | None,
    rate: float | None,
    until_idle: bool,
    output: str | None,
    alerts_out: str | None,
    dead_letters_out: str | None,
    rejects: str,
    quiet: bool,
    embedded: str | None,
    **flags: Any,
) -> None:
    """Run the stream: broker (embedded unless --broker), topics, workers; feed a file, print decisions.

    Without --until-idle it runs until Ctrl-C or SIGTERM; either stops the workers and the embedded
    broker before it exits.
    """
    import asyncio
    import signal

    from .stream.runner import Progress, run_stream

    _distinct(
        {"--feed": feed},
        {"-o": output, "--alerts": alerts_out, "--dead-letters": dead_letters_out, "--rejects": rejects},
    )
    settings = _settings(flags)
    if embedded is not None and settings.stream.broker:
        raise click.UsageError("--embedded starts a broker of its own; it cannot be used with --broker")
    if not settings.stream.broker and settings.kafka.security_protocol != SecurityProtocol.PLAINTEXT:
        raise click.UsageError(
            f"security_protocol {settings.kafka.security_protocol.value} is for a cluster given with "
            "--broker; the embedded broker is plaintext"
        )
    if output is not None and not until_idle:
        raise click.UsageError(
            "-o needs --until-idle (the final decisions are known only when the stream is idle)"
        )
    if alerts_out is not None and not until_idle:
        raise click.UsageError("--alerts needs --until-idle (it writes the alerts once they are all out)")
    if alerts_out is not None and settings.stream.order != "clock":
        raise click.UsageError(
            "--alerts needs clock order (STREAM_LSH_ORDER=clock): in arrival order nothing tells "
            "when every alert of the fed pages is out"
        )
    if alerts_out is not None and settings.stream.status_interval_s == 0:
        raise click.UsageError(
            "--alerts needs the workers' status reports (they say when every alert is out): "
            "STREAM_LSH_STATUS_INTERVAL_S must not be 0"
        )
    if until_idle and feed is None:
        raise click.UsageError("--until-idle needs --feed (idle means: everything fed has been decided)")
    lines = split_lines(Path(feed).read_bytes()) if feed else None
    out = sys.stdout.buffer

    def show(record: dict[str, Any]) -> None:
        if not quiet:
            out.write(orjson.dumps(record) + b"\n")
            out.flush()

    def status(line: str) -> None:
        if not quiet:
            click.echo(f"[stream-lsh] {line}", err=True)

    # SIGTERM (a supervisor, `timeout`, `docker stop`) takes Ctrl-C's path: its default action would
    # end this process at once and leave the workers and the embedded broker running
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    progress = Progress()
    try:
        with _stream_errors():
            asyncio.run(
                run_stream(
                    settings,
                    workers=workers,
                    feed=lines,
                    until_idle=until_idle,
                    rate=rate,
                    on_decision=show,
                    on_status=status,
                    embedded=embedded or "tansu",
                    alerts=alerts_out is not None,
                    progress=progress,
                )
            )
        stopped = False
    except KeyboardInterrupt:
        stopped = True
    click.echo(f"[stream-lsh] {'stopped: ' if stopped else ''}{progress.summary()}", err=True)
    if dead_letters_out is not None:
        with _open_output(dead_letters_out) as handle:
            for record in progress.dead_letter_records:
                handle.write(orjson.dumps(record) + b"\n")
    sink = RejectSink(lambda: _open_output(rejects))
    for line, why in progress.refused:
        sink.write(line.number, why, line.raw)
    sink.close()
    if stopped:
        _report_rejects(sink, rejects)
        return
    if output is not None:
        order = list(dict.fromkeys(f.page_id for f in progress.fed if f.page_id in progress.decisions))
        with _open_output(output) as handle:
            for page_id in order:
                handle.write(orjson.dumps(progress.decisions[page_id]) + b"\n")
    if alerts_out is not None:
        with _open_output(alerts_out) as handle:
            for record in progress.alerts.values():
                handle.write(orjson.dumps(record) + b"\n")
    _report_rejects(sink, rejects)


@cli.command()
@click.argument("pages", type=_InputFile())
@click.option("--rate", type=float, help="Pages per second [as fast as possible].")
@_rejects_option("Lines the input topic cannot take (over --max-message-bytes)")
@_settings_options("produce")
def produce(pages: str, rate: float | None, rejects: str, **flags: Any) -> None:
    """Send a file of JSON-line pages to the input topic, keyed by page id, each record stamped
    with the file's clock (the one `dedup` reads the file with).

    A line too large for the input topic is not sent: it goes to the rejects file with its line
    number and size, the rest of the file is sent, and the exit status is 1.
    """
    import asyncio

    from .stream.client import feed_lines
    from .stream.connection import KafkaConnection

    _distinct({"PAGES": pages}, {"--rejects": rejects})
    settings = _settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("produce needs a broker: --broker host:port or STREAM_LSH_BROKER")
    sink = RejectSink(lambda: _open_output(rejects))
    with _stream_errors():
        fed = asyncio.run(
            feed_lines(
                KafkaConnection.from_settings(settings),
                settings.stream.input_topic,
                split_lines(Path(pages).read_bytes()),
                clock=settings.file_clock(),
                max_page_bytes=settings.input.max_page_bytes,
                rate=rate,
                max_record_bytes=settings.kafka.max_message_bytes,
                on_refused=lambda line, why: sink.write(line.number, why, line.raw),
            )
        )
    sink.close()
    click.echo(f"sent {len(fed):,} records to {settings.stream.input_topic}", err=True)
    _report_rejects(sink, rejects)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@click.option(
    "--since",
    type=click.FloatRange(min=1),
    default=600,
    show_default=True,
    help="Show the workers that reported in the last this many seconds (the status topic keeps a day).",
)
@_settings_options("status")
def status(as_json: bool, since: float, **flags: Any) -> None:
    """Print a running deployment: its workers (up or stale), their partitions, rates, backlog and
    input lag, from the reports they publish every STREAM_LSH_STATUS_INTERVAL_S; and the consumer
    group's committed lag, from the broker. Exit code 69 when no worker is up."""
    import asyncio
    import logging

    from .stream.connection import KafkaConnection
    from .stream.deployment import format_status, read_deployment
    from .stream.topics import TopicNames

    settings = _settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("status needs a broker: --broker host:port or STREAM_LSH_BROKER")
    names = TopicNames.from_settings(settings)
    # its clients' failures end as one line below; aiokafka would log each attempt of each client too
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    with _stream_errors():
        found = asyncio.run(read_deployment(KafkaConnection.from_settings(settings), names, since_s=since))
    click.echo(found.to_json().decode() if as_json else format_status(found))
    if not found.up:
        seen = len(found.workers)
        why = (
            f"the {seen} seen in the last {since:g} s have not reported for 3 of their intervals"
            if seen
            else f"none has reported to {names.status} in the last {since:g} s (are workers of this "
            "app id running on this broker, with STREAM_LSH_STATUS_INTERVAL_S above 0?)"
        )
        click.echo(f"stream-lsh: no worker of app {names.app_id} is up: {why}", err=True)
        sys.exit(ExitCode.UNAVAILABLE)


@cli.command()
@click.argument("topic")
@click.option("--follow/--no-follow", default=True, help="Keep waiting for new records [follow].")
@_settings_options("tail")
def tail(topic: str, follow: bool, **flags: Any) -> None:
    """Print a topic from its start, one JSON line per record: {"key", "value", "partition", "offset"}."""
    import asyncio

    from .stream.client import read_topic
    from .stream.connection import KafkaConnection

    settings = _settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("tail needs a broker: --broker host:port or STREAM_LSH_BROKER")
    kafka = KafkaConnection.from_settings(settings)

    async def show() -> None:
        async for key, value, partition, offset in read_topic(kafka, topic, follow=follow):
            try:
                decoded = None if value is None else orjson.loads(value)
            except orjson.JSONDecodeError:
                decoded = value.decode("utf-8", "replace") if value is not None else None
            line = {
                "key": None if key is None else key.decode("utf-8", "replace"),
                "value": decoded,
                "partition": partition,
                "offset": offset,
            }
            sys.stdout.buffer.write(orjson.dumps(line) + b"\n")
            sys.stdout.buffer.flush()

    try:
        with _stream_errors():
            asyncio.run(show())
    except KeyboardInterrupt:
        pass


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


if __name__ == "__main__":
    main()
