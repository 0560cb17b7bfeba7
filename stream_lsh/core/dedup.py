"""The deduplicator: one page in, one decision out, in arrival order.

For each page (MMDS sec. 3.4.3, in a stream):

1. visible text -> blocks -> normalised; the blocks teach the boilerplate learner, then blocks
   known as site boilerplate are dropped;
2. exact-duplicate fast path: a page whose remaining text hashes like an indexed page's is its
   duplicate with similarity 1.0 (sec. 3.9.1), without shingling;
3. shingles -> minhash signature -> band keys; fewer than ``min_shingles`` shingles (repeats
   counted): ``no_content`` (never indexed, so such pages never cluster with each other);
4. candidates = indexed pages sharing a band; each verified by signature agreement (or exact
   Jaccard on stored shingle sets) >= threshold;
5. the decision: ``duplicate`` of the most similar verified candidate (ties: the earliest), in that
   candidate's cluster; otherwise ``unique``, founding a cluster named after itself;
6. the page is indexed (duplicates too, so a cluster stays findable through its newest members
   after its first page expires) with its event time, and leaves the index when the clock passes
   that time plus the window (:mod:`.clock`: the clock is a file's own, or a record's timestamp,
   never the wall clock). Its blocks taught the boilerplate learner in step 1: the learner
   never looks at decisions, which is what lets a batch be prepared page by page and decided page
   by page with the numeric work in between done for all pages at once.

Clusters are never merged: a page that matches pages of two clusters joins the cluster of the most
similar one, and decisions already made stand. So a cluster id, once given, never changes.

A page whose id is already indexed with the same raw body gets the stored decision again
(redelivery is harmless); with a different body it replaces the old version.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import dataclasses
from typing import Any, Sequence

import numpy as np
import xxhash

from .banding import Banding, optimal_banding
from .boilerplate import BoilerplateLearner
from .clock import EventTime, FileClock, event_time
from .hashing import TokenHasher, xxh64_text
from .index import IndexEntry, LSHIndex
from .minhash import MinHasher, agreement
from .page import Page
from ..errors import StateMismatchError
from .scheme import Scheme, check_compatible
from .shingles import ShingleKind, ShingleSpec, Shingler
from .stopwords import DEFAULT_LANGUAGES, LANGUAGE_NAMES, StopWordLists
from .text import html_blocks, normalize, text_blocks

__all__ = ["Decision", "DedupConfig", "Deduplicator", "PreparedPage", "Status", "export_state", "import_state"]

_BLOCK_SEED = 0x5EED_B10C  # block fingerprints are internal to the learner: not part of the scheme


def _block_fingerprint(block: str) -> int:
    return xxhash.xxh3_64_intdigest(block.encode("utf-8", "surrogatepass"), _BLOCK_SEED)
UNIQUE, DUPLICATE, NO_CONTENT = "unique", "duplicate", "no_content"
Status = str


@dataclass(frozen=True)
class Decision:
    """The verdict on one page; ``to_dict`` is the output record."""

    id: str
    status: Status
    cluster_id: str | None
    duplicate_of: str | None = None
    similarity: float | None = None
    candidates: int = 0
    date_ignored: str | None = None  # why the page's published_at was not its event time (see .clock)
    replayed: bool = field(default=False, compare=False)  # given again to a redelivered page

    def to_dict(self) -> dict[str, Any]:
        record = {
            "id": self.id,
            "status": self.status,
            "cluster_id": self.cluster_id,
            "duplicate_of": self.duplicate_of,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "candidates": self.candidates,
        }
        if self.date_ignored is not None:
            record["date_ignored"] = self.date_ignored
        return record


@dataclass(frozen=True)
class DedupConfig:
    """Every knob of the engine. Signature-defining ones also form the :class:`Scheme`.

    Args:
        threshold: Jaccard similarity from which a page is a duplicate, in (0, 1).
        num_perm: signature length n.
        seed: seeds token hashing and the minhash functions.
        shingles: shingle kind and size.
        languages: stop-word languages (detection picks among them; the first wins ties).
        bands, rows: explicit banding; both None to choose it from the threshold.
        fp_weight, fn_weight: weights of the two error areas when choosing the banding.
        verify: "signature" (agreement of signatures) or "jaccard" (exact, on stored shingle sets).
        min_shingles: pages with fewer shingles are ``no_content``.
        bucket_cap: most pages kept per LSH bucket.
        ttl: seconds of event time a page stays indexed; None keeps pages forever.
        boilerplate: learn and drop site-wide boilerplate blocks.
        boilerplate_min_pages: distinct contexts (pages with different other content) that make a
            block of a site boilerplate.
        drop_chrome: drop nav/aside/footer/form elements of HTML pages before anything else.
        max_future: a ``published_at`` more than this many seconds after the clock is ignored.
    """

    threshold: float = 0.3
    num_perm: int = 128
    seed: int = 1
    shingles: ShingleSpec = field(default_factory=ShingleSpec)
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    bands: int | None = None
    rows: int | None = None
    fp_weight: float = 0.5
    fn_weight: float = 0.5
    verify: str = "signature"
    min_shingles: int = 5
    bucket_cap: int = 64
    ttl: float | None = 3 * 86400.0
    boilerplate: bool = True
    boilerplate_min_pages: int = 2
    drop_chrome: bool = True
    max_future: float = 86400.0

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or not 0 <= self.seed < 1 << 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {self.seed!r}")
        if self.max_future < 0:
            raise ValueError(f"max_future must be >= 0 seconds, got {self.max_future}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold!r}")
        if (self.bands is None) != (self.rows is None):
            raise ValueError("give both bands and rows, or neither (to choose them from the threshold)")
        if self.verify not in ("signature", "jaccard"):
            raise ValueError(f"verify must be 'signature' or 'jaccard', got {self.verify!r}")
        if self.min_shingles < 1:
            raise ValueError(f"min_shingles must be >= 1, got {self.min_shingles}")
        if self.bucket_cap < 1:
            raise ValueError(f"bucket_cap must be >= 1, got {self.bucket_cap}")
        if self.ttl is not None and self.ttl <= 0:
            raise ValueError(f"ttl must be positive seconds or None, got {self.ttl}")
        if self.boilerplate_min_pages < 2:
            raise ValueError(f"boilerplate_min_pages must be >= 2, got {self.boilerplate_min_pages}")
        unknown = [lang for lang in self.languages if lang not in LANGUAGE_NAMES]
        if unknown or not self.languages:
            raise ValueError(f"unknown stop-word languages {unknown}; available: {', '.join(LANGUAGE_NAMES)}")
        self.banding()  # validates bands/rows against num_perm

    def banding(self) -> Banding:
        if self.bands is not None and self.rows is not None:
            return Banding(bands=self.bands, rows=self.rows, num_perm=self.num_perm)
        return optimal_banding(self.threshold, self.num_perm, self.fp_weight, self.fn_weight)


@dataclass
class PreparedPage:
    """A page after the per-page text steps; signed later, a batch at a time."""

    page: Page
    clock_ms: int | None  # when the page was read (see .clock); None before a file's clock starts
    time: EventTime
    text: str
    content_hash: int  # of the text left after boilerplate removal: the exact-duplicate key
    body_hash: int  # of the raw body: recognises a redelivered page
    shingles: np.ndarray | None = None
    signature: np.ndarray | None = None
    band_keys: np.ndarray | None = None


OWN_CLOCK = object()  # "read by the engine's own file clock", where None means "no clock yet"


class Deduplicator:
    """Sequential near-duplicate detection over a stream of pages (see the module doc).

    :meth:`process_batch` gives exactly the decisions that :meth:`process` gives page by page; it
    only does the numeric work (shingles, signatures, band keys) for the whole batch at once.
    """

    def __init__(self, config: DedupConfig | None = None) -> None:
        self.config = config = config or DedupConfig()
        hasher = TokenHasher(seed=config.seed)
        stop_words = StopWordLists.load(config.languages) if config.shingles.kind is ShingleKind.STOPWORD else None
        self.shingler = Shingler(config.shingles, hasher, stop_words)
        self.minhasher = MinHasher(num_perm=config.num_perm, seed=config.seed)
        self.banding = config.banding()
        self.scheme = Scheme(
            shingles=config.shingles.kind.value,
            shingle_size=config.shingles.size,
            num_perm=config.num_perm,
            seed=config.seed,
            stop_words_source=stop_words.source if stop_words else "",
            stop_words_digest=stop_words.digest if stop_words else "",
            stop_words_languages=stop_words.languages if stop_words else (),
        )
        self.index = LSHIndex(self.scheme, self.banding, bucket_cap=config.bucket_cap, ttl=config.ttl)
        self.learner = BoilerplateLearner(min_pages=config.boilerplate_min_pages) if config.boilerplate else None
        self.file_clock = FileClock(max_future=config.max_future)  # the clock of pages given without one
        self.clock_ms: int | None = None  # the newest clock seen: it moves the window
        self.dates_ignored: Counter[str] = Counter()  # indexed pages whose published_at was not used, by reason

    # -- per-page text steps ------------------------------------------------------------------
    def prepare(self, page: Page, clock_ms: int | None, *, learn: bool = False) -> PreparedPage:
        """Extract the page's text, drop boilerplate blocks, hash what is left.

        With ``learn``, the page's blocks first teach the boilerplate learner, so the page is
        already filtered with what it showed (the learner never looks at decisions).
        """
        return self.prepare_blocks(page, self.extract_blocks(page), clock_ms, learn=learn)

    def extract_blocks(self, page: Page) -> list[str]:
        """The page's normalised text blocks: the stateless part of :meth:`prepare`, which the
        stream does where a page comes in, before routing it to its site's learner."""
        if page.html is not None:
            raw_blocks = html_blocks(page.html, drop_chrome=self.config.drop_chrome)
        else:
            raw_blocks = text_blocks(page.text or "")
        return [block for block in map(normalize, raw_blocks) if block]  # per block: ASCII blocks stay fast

    def prepare_blocks(self, page: Page, blocks: list[str], clock_ms: int | None, *,
                       learn: bool = False) -> PreparedPage:
        """The stateful part of :meth:`prepare`: the learner's step, then the hashes."""
        blocks = self.filter_blocks(blocks, page.site if learn else None)
        text = " ".join(blocks)
        seed = self.config.seed
        return PreparedPage(page, clock_ms, self.event_time(page, clock_ms), text, xxh64_text(text, seed),
                            self.body_hash(page))

    def body_hash(self, page: Page) -> int:
        """Hash of the raw body: the same id with the same body is a redelivery."""
        return xxh64_text(page.html if page.html is not None else (page.text or ""), self.config.seed)

    def event_time(self, page: Page, clock_ms: int | None) -> EventTime:
        """The page's event time when read at ``clock_ms`` (:func:`.clock.event_time`)."""
        return event_time(page.date, clock_ms, window=self.config.ttl, max_future=self.config.max_future)

    def filter_blocks(self, blocks: list[str], learn_for_site: str | None,
                      learner: BoilerplateLearner | None = None, flagged: list[int] | None = None) -> list[str]:
        """Drop known boilerplate blocks; with ``learn_for_site``, the blocks first teach the
        learner (``learner``, or the engine's own). Returns the blocks that are left; blocks this
        page made boilerplate are appended to ``flagged``."""
        learner = learner if learner is not None else self.learner
        if learner is None:
            return blocks
        fingerprints = learner.fingerprints(blocks, _block_fingerprint)
        known = learner.is_boilerplate
        if learn_for_site is not None:
            newly = learner.observe(learn_for_site, [f for f in fingerprints if f is not None and not known(f)])
            if flagged is not None:
                flagged.extend(newly)
        return [block for block, f in zip(blocks, fingerprints) if f is None or not known(f)]

    def sign(self, prepared: Sequence[PreparedPage]) -> None:
        """Shingle, minhash and band a batch of prepared pages; those with too few shingles stay unsigned."""
        if not prepared:
            return
        batch = self.shingler.shingle_batch([p.text for p in prepared], [p.page.lang for p in prepared])
        counts = batch.counts()
        signatures = self.minhasher.signatures(batch.values, batch.offsets)
        keys = self.banding.band_keys(signatures)
        keep_sets = self.config.verify == "jaccard"
        for i, p in enumerate(prepared):
            if keep_sets:
                p.shingles = batch.page_set(i)
            if counts[i] >= self.config.min_shingles:
                p.signature, p.band_keys = signatures[i], keys[i]

    # -- decisions --------------------------------------------------------------------------
    def process(self, page: Page, clock_ms: int | None | object = OWN_CLOCK) -> Decision:
        """Decide on one page and add it to the index (see the module doc). ``clock_ms``: when it was
        read (None: before a file's clock started); by default the engine's own file clock reads it."""
        return self.process_batch([page], None if clock_ms is OWN_CLOCK else [clock_ms])[0]  # type: ignore[list-item]

    def process_batch(self, pages: Sequence[Page], clocks: Sequence[int | None] | None = None) -> list[Decision]:
        """Decide on pages in order, as :meth:`process` would one by one.

        ``clocks``: when each page was read (:mod:`.clock`); without them, the engine's own
        :class:`~.clock.FileClock` reads the pages as lines of one file.
        """
        if clocks is None:
            clocks = [self.file_clock.tick(page.date, page.site) for page in pages]
        prepared = [self.prepare(page, clock, learn=True) for page, clock in zip(pages, clocks, strict=True)]
        self.sign(prepared)
        return [self._process_prepared(p) for p in prepared]

    def probe(self, page: Page) -> Decision:
        """Decide on a page without indexing it or learning from it (a query-only lookup)."""
        prepared = self.prepare(page, self.clock_ms)
        self.sign([prepared])
        return self._decide(prepared)

    def remove(self, page_id: str) -> bool:
        """Retract a page from the index; False if it was not indexed."""
        return self.index.remove(page_id)

    def _process_prepared(self, prepared: PreparedPage) -> Decision:
        self._advance(prepared.clock_ms)  # first: a redelivery after its page left the window is a new page
        known = self.index.get(prepared.page.id)
        if known is not None:
            if known.body_hash == prepared.body_hash:  # a redelivery: the same answer, nothing changes
                return dataclasses.replace(known.decision, replayed=True)
            self.index.remove(known.id)  # a new version replaces the old one
        decision = self._decide(prepared)
        if prepared.time.date_ignored is not None:
            self.dates_ignored[prepared.time.date_ignored] += 1
        if decision.status != NO_CONTENT:
            self._insert(prepared, decision)
        return decision

    def _advance(self, clock_ms: int | None) -> None:
        """The clock moves the window: pages whose event time is older than the window leave."""
        if clock_ms is None or (self.clock_ms is not None and clock_ms <= self.clock_ms):
            return
        self.clock_ms = clock_ms
        self.index.expire(clock_ms / 1000.0)

    def _decide(self, prepared: PreparedPage) -> Decision:
        decision = self._verdict(prepared)
        ignored = prepared.time.date_ignored
        return decision if ignored is None else dataclasses.replace(decision, date_ignored=ignored)

    def _verdict(self, prepared: PreparedPage) -> Decision:
        page_id = prepared.page.id
        exact = self.index.exact(prepared.content_hash)
        if exact is not None:
            return Decision(page_id, DUPLICATE, exact.cluster_id, exact.id, 1.0, 1)
        if prepared.signature is None or prepared.band_keys is None:
            return Decision(page_id, NO_CONTENT, None)
        candidates = self.index.query(prepared.band_keys, self.scheme.fingerprint)
        if not candidates:
            return Decision(page_id, UNIQUE, self._new_cluster_id(page_id))
        similarities = self._similarities(prepared, candidates)
        best = int(np.argmax(similarities))  # first maximum: the earliest-indexed candidate
        similarity = float(similarities[best])
        if similarity >= self.config.threshold:
            match = candidates[best]
            return Decision(page_id, DUPLICATE, match.cluster_id, match.id, similarity, len(candidates))
        return Decision(page_id, UNIQUE, self._new_cluster_id(page_id), None, similarity, len(candidates))

    def _new_cluster_id(self, page_id: str) -> str:
        """The founding page's id, unless a cluster of that id still has pages (the id was re-sent
        with another story, or retracted and reused): then ``id#2``, ``id#3``... so that one cluster
        id never names two stories at once."""
        sizes, candidate, n = self.index.cluster_sizes, page_id, 1
        while candidate in sizes:
            n += 1
            candidate = f"{page_id}#{n}"
        return candidate

    def _similarities(self, prepared: PreparedPage, candidates: list[IndexEntry]) -> np.ndarray:
        assert prepared.signature is not None
        if self.config.verify == "jaccard" and prepared.shingles is not None:
            mine = prepared.shingles
            return np.array([_jaccard(mine, c.shingles) for c in candidates])
        return agreement(prepared.signature, np.stack([c.signature for c in candidates]))

    def _insert(self, prepared: PreparedPage, decision: Decision) -> None:
        exact = self.index.exact(prepared.content_hash)
        signature, band_keys, shingles = prepared.signature, prepared.band_keys, prepared.shingles
        if exact is not None:  # share the original's arrays: same text, same signature
            signature, band_keys, shingles = exact.signature, exact.band_keys, exact.shingles
        assert signature is not None and band_keys is not None
        self.index.insert(IndexEntry(
            id=decision.id,
            signature=signature,
            band_keys=band_keys,
            cluster_id=decision.cluster_id or decision.id,
            event_time=prepared.time.seconds,
            content_hash=prepared.content_hash,
            scheme=self.scheme.fingerprint,
            body_hash=prepared.body_hash,
            shingles=shingles if self.config.verify == "jaccard" else None,
            decision=decision,
        ))


STATE_FORMAT = 3


def export_state(dedup: "Deduplicator") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The engine's state as a JSON-friendly header plus numpy arrays (no I/O here).

    Entries are listed in insertion order, so re-inserting them rebuilds identical buckets
    (including which ids a full bucket has pushed out) and the same expiry order.
    """
    entries = list(dedup.index)
    header = {
        "format": STATE_FORMAT,
        "scheme": dedup.scheme.to_dict(),
        "banding": [dedup.banding.bands, dedup.banding.rows],
        "clock": dedup.clock_ms,
        "file_clock": dedup.file_clock.state(),
        "ids": [e.id for e in entries],
        "clusters": [e.cluster_id for e in entries],
        "decisions": [e.decision.to_dict() for e in entries],
        "learner": dedup.learner.state() if dedup.learner is not None else None,
        "tables": dedup.index.export_tables(),
    }
    width = dedup.scheme.num_perm
    shingles = [e.shingles if e.shingles is not None else np.zeros(0, np.uint64) for e in entries]
    arrays = {
        "signatures": np.stack([e.signature for e in entries]) if entries else np.zeros((0, width), np.uint32),
        "event_times": np.array([np.nan if e.event_time is None else e.event_time for e in entries], dtype=np.float64),
        "content_hashes": np.array([e.content_hash for e in entries], dtype=np.uint64),
        "body_hashes": np.array([e.body_hash for e in entries], dtype=np.uint64),
        "shingle_counts": np.array([s.size for s in shingles], dtype=np.int64),
        "shingles": np.concatenate(shingles) if shingles else np.zeros(0, np.uint64),
    }
    return header, arrays


def import_state(dedup: "Deduplicator", header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Load state exported by :func:`export_state` into an empty engine; refuse another scheme."""
    if header.get("format") != STATE_FORMAT:
        raise ValueError(f"unsupported state format {header.get('format')!r} (this version reads {STATE_FORMAT})")
    check_compatible(dedup.scheme, Scheme.from_dict(header["scheme"]), what="saved state")
    if list(header["banding"]) != [dedup.banding.bands, dedup.banding.rows]:
        raise StateMismatchError(
            f"saved state was banded with b, r = {tuple(header['banding'])}, this engine uses "
            f"{(dedup.banding.bands, dedup.banding.rows)}: band keys would not match. Use the same "
            "--threshold/--bands/--rows as when the state was saved."
        )
    if len(dedup.index):
        raise ValueError("state can only be loaded into an empty engine")
    offsets = np.concatenate([[0], np.cumsum(arrays["shingle_counts"])])
    keep_shingles = dedup.config.verify == "jaccard"
    entries = []
    for i, page_id in enumerate(header["ids"]):
        signature = arrays["signatures"][i].copy()
        entries.append(IndexEntry(
            id=page_id,
            signature=signature,
            band_keys=dedup.banding.band_keys(signature),
            cluster_id=header["clusters"][i],
            event_time=None if np.isnan(arrays["event_times"][i]) else float(arrays["event_times"][i]),
            content_hash=int(arrays["content_hashes"][i]),
            scheme=dedup.scheme.fingerprint,  # checked against the header above
            body_hash=int(arrays["body_hashes"][i]),
            shingles=arrays["shingles"][offsets[i]:offsets[i + 1]].copy() if keep_shingles else None,
            decision=Decision(**header["decisions"][i]),  # to_dict() leaves out "replayed"
        ))
    dedup.index.restore(entries, header["tables"])
    dedup.clock_ms = header["clock"]
    dedup.file_clock.load_state(header["file_clock"])
    if dedup.learner is not None and header.get("learner") is not None:
        dedup.learner.load_state(header["learner"])


def _jaccard(a: np.ndarray, b: np.ndarray | None) -> float:
    if b is None or (a.size == 0 and b.size == 0):
        return 0.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter)
