"""Commands over files: ``dedup``, ``eval``, ``tune`` and ``generate``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import click
import numpy as np
import orjson

from ..batch import DecisionRecords, RejectSink, SpreadAlerts, run_batch
from ..core.banding import error_rates, s_curve
from ..core.spread import SpreadTracker
from ..errors import StreamLshError
from ..gc_policy import tune_gc
from ..settings import Settings
from ..state import DirectoryState, load_state, save_state
from ..synthetic.shapes import SHAPE_SUMMARIES
from .group import cli
from .params import (
    InputFile,
    OutputFile,
    batch_engine,
    check_state_path,
    distinct,
    first_line,
    load_settings,
    open_output,
    progress_bar,
    read_input,
    rejects_option,
    report_rejects,
    settings_options,
    signing_jobs,
    write_output,
)


@cli.command()
@click.argument("pages", default="-", type=InputFile(stdin=True))
@click.option(
    "-o",
    "--output",
    "output",
    default="-",
    type=OutputFile(),
    help="Decisions, one JSON line per page [stdout].",
)
@click.option(
    "--unique-out",
    type=OutputFile(),
    help=(
        "Write the input line of every page judged unique here, and of every duplicate that holds the "
        "smaller page it joined (a story after its alert): what to index."
    ),
)
@rejects_option("Rejected lines")
@click.option(
    "--state",
    type=click.Path(dir_okay=False),
    help="Index state file: loaded first if it exists, saved at the end (continue across runs). It "
    "keeps the clusters' spread too, so alerts of later runs count earlier pages and never repeat.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    help="Keep the window in this directory (RocksDB), written as pages are decided, so that memory "
    "stays flat however many pages the window holds; continue across runs like --state.",
)
@click.option(
    "--alerts",
    "alerts_path",
    type=OutputFile(),
    help="Write story-spread alerts here, one JSON line each, in the order they fire: a cluster "
    "reaching a level of --alert-levels within --alert-within-hours of event time.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar [on when stderr is a terminal].")
@settings_options("dedup")
def dedup(
    pages: str,
    output: str,
    unique_out: str | None,
    rejects: str,
    state: str | None,
    state_dir: str | None,
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
      candidates          pages that shared a band or its headline with it
      match               what made it a duplicate: jaccard | containment | opening |
                          headline (opening: a page of a sentence or two that opens with
                          the earlier page's first words; headline: such a page, a feed
                          card or a teaser, with the earlier page's headline, or a story
                          after another site's card with its headline)
      containment         how much of the smaller page lies in the larger
      date_ignored        why its published_at was not used (only when it was not)
      refused_by          the fuller page of a story that kept it out of that story's
                          cluster (only then: it holds the story's teaser, not the story)
      notice              what a no_content page says in place of its article
                          (only then): not_found | removed | server_error | redirect |
                          bot_check | javascript | consent | paywall | login | geo_block |
                          no_results
    Ends with a summary line and any warnings on stderr. Exit status 1 if any line was rejected
    (see --rejects), 2 for a usage error.
    """
    distinct(
        {"PAGES": pages, "--state": state, "--state-dir": state_dir},
        {"-o": output, "--unique-out": unique_out, "--rejects": rejects, "--alerts": alerts_path},
    )
    settings = load_settings(flags)
    if alerts_path == "-" and output == "-":
        raise click.UsageError("--alerts - and the decisions cannot both go to stdout: give -o or a file")
    if state is not None and state_dir is not None:
        raise click.UsageError("--state and --state-dir keep the same state two ways: give one")
    tune_gc()
    # the spread is followed for --alerts, and with saved state always, so that the state stays whole
    tracker = SpreadTracker(settings.engine.alert_rules()) if alerts_path or state or state_dir else None
    directory = None
    if state_dir is not None:
        directory = open_state_dir(state_dir, settings, tracker)
        engine = directory.engine
    else:
        engine = batch_engine(settings)
    if state is not None:
        check_state_path(state)
        if Path(state).exists():
            try:
                load_state(engine, state, spread=tracker)
            except (StreamLshError, ValueError, OSError) as error:
                raise click.UsageError(f"cannot use state file {state}: {error}") from None
    sink = RejectSink(lambda: open_output(rejects))
    with (
        read_input(pages) as (source, size),
        write_output(output) as out,
        write_output(unique_out) as uniques,
        write_output(alerts_path) as alerts_out,
    ):
        assert out is not None
        jobs = signing_jobs(settings)
        ended = False
        try:
            with progress_bar(size, progress) as bar:
                summary = run_batch(
                    source,
                    engine,
                    out=out,
                    rejects=sink,
                    unique_out=uniques,
                    alerts=None if tracker is None else SpreadAlerts(tracker, alerts_out),
                    max_page_bytes=settings.input.max_page_bytes,
                    on_line=bar.update,
                    jobs=jobs,
                    learnt=state is not None or directory is not None,
                )
            ended = True
        finally:  # an interrupted run keeps what it decided, and the state that goes with it
            if directory is not None:
                # signing processes stopped early keep what they learnt: the directory is then
                # left as a killed run leaves it, and the next run says so
                if ended or jobs == 1:
                    directory.save()
                directory.close()
        out.flush()
    sink.close()
    if state is not None:
        save_state(engine, state, spread=tracker)
    click.echo(summary.format(), err=True)
    for warning in summary.warnings():
        click.echo(f"warning: {warning}", err=True)
    report_rejects(sink, rejects)


def open_state_dir(path: str, settings: Settings, tracker: SpreadTracker | None) -> DirectoryState:
    """The engine over the window in ``path``, with the state kept there loaded; one line if not."""
    check_state_path(path)
    try:
        directory = DirectoryState(
            path,
            settings.dedup_config(),
            cache_bytes=settings.engine.state_cache_mb << 20,
            spread=tracker,
        )
    except StreamLshError as error:
        raise click.UsageError(f"cannot use state directory {path}: {error}") from None
    except Exception as error:  # RocksDB's own: held by another run, damaged files
        raise click.UsageError(f"cannot open state directory {path}: {first_line(error)}") from None
    if directory.unfinished:
        click.echo(
            f"warning: the last run over {path} was killed before it ended: the pages it decided are "
            "indexed, but the boilerplate learner, the file clock and the spread are as the run "
            "before it left them",
            err=True,
        )
    directory.engine.file_clock = settings.file_clock()
    directory.load()
    return directory


@cli.command()
@settings_options("tune")
def tune(**flags: Any) -> None:
    """Show the LSH bands b and rows r the engine uses for these settings, and their S-curve.

    With containment on (the default), the bands must also catch a teaser a quarter of its
    story's size, whose Jaccard similarity is far below the threshold: they are chosen for that
    lower similarity, the "reach".
    """
    settings = load_settings(flags)
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
    from ..synthetic import MAX_HARD_CASE_SHARE

    if not 0.0 <= value <= MAX_HARD_CASE_SHARE:
        raise click.BadParameter(f"must be a share from 0 to {MAX_HARD_CASE_SHARE}, got {value}")
    return value


def _spreading_count(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """The count of spreading stories, refused by the generator's own bound."""
    from ..synthetic import MAX_SPREADING

    if not 0 <= value <= MAX_SPREADING:
        raise click.BadParameter(f"must be a number of stories from 0 to {MAX_SPREADING}, got {value}")
    return value


@cli.command()
@click.option("--pages", "count", type=click.IntRange(min=1), required=True, help="Number of pages.")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed; the same seed gives the same pages."
)
@click.option("-o", "--output", required=True, type=OutputFile(), help="Pages as JSON lines.")
@click.option(
    "--labels",
    required=True,
    type=OutputFile(),
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
    "--digests",
    type=float,
    default=0.0,
    show_default=True,
    callback=_hard_case_share,
    metavar="SHARE",
    help="Share of pages (0 to 0.5) that are digests: a newsletter listing 4-9 of the day's stories, "
    "each as a headline and its first sentence or two. Each has its own label: NOT a duplicate of "
    "the stories it lists, though it holds a teaser of each.",
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
    help="A page shape real feeds send (repeat for several): "
    + "; ".join(f"{name} ({summary})" for name, summary in SHAPE_SUMMARIES.items())
    + ".",
)
def generate(
    count: int,
    seed: int,
    output: str,
    labels: str,
    messy_dates: bool,
    teasers: float,
    quotes: float,
    digests: float,
    short_stories: float,
    spreading: int,
    prose: str,
    shapes: tuple[str, ...],
) -> None:
    """Generate synthetic news pages with known duplicate clusters (for eval and benchmarks)."""
    from ..synthetic import Shapes, generate_corpus_with_truth, write_corpus

    distinct({}, {"-o": output, "--labels": labels})
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
            digests=digests,
        )
    except (StreamLshError, ValueError) as error:
        raise click.UsageError(str(error)) from None
    write_corpus(corpus, output, labels)
    clusters = sum(1 for size in Counter(corpus.labels.values()).values() if size > 1)
    order = " in arrival order with messy dates" if messy_dates else ""
    kinds = Counter(page.kind for page in truth.values())
    hard = f"; {kinds['teaser']:,} teasers, {kinds['quote']:,} quoting pages" if teasers or quotes else ""
    if digests:
        hard += f"; {kinds['digest']:,} digests"
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
@click.argument("pages", type=InputFile(stdin=True))
@click.argument("labels", type=InputFile(holds="a JSON file of labels"))
@click.option("--json", "as_json", is_flag=True, help="Print the scores as one JSON object.")
@rejects_option("Rejected lines (scored as pages of their own)")
@click.option(
    "--decisions",
    "decisions_file",
    type=InputFile(),
    help="Score these decisions (e.g. `run -o`'s) instead of running dedup on PAGES.",
)
@settings_options("eval")
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
    from ..evaluation import pair_scores, predicted_clusters
    from ..synthetic import load_labels

    distinct({"PAGES": pages, "LABELS": labels, "--decisions": decisions_file}, {"--rejects": rejects})
    try:
        truth = load_labels(labels)
    except ValueError as error:  # orjson's JSONDecodeError is one
        text = first_line(error)
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
        settings = load_settings(flags)
        engine = batch_engine(settings)
        decisions = DecisionRecords()
        sink = RejectSink(lambda: open_output(rejects))
        with read_input(pages) as (source, _):
            summary = run_batch(
                source,
                engine,
                out=decisions,
                rejects=sink,
                max_page_bytes=settings.input.max_page_bytes,
                jobs=signing_jobs(settings),
                learnt=False,
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
        report_rejects(sink, rejects)
