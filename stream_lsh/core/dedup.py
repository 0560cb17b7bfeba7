"""The deduplicator: one page in, one decision out, in arrival order.

For each page (MMDS sec. 3.4.3, in a stream):

1. visible text -> blocks -> normalised; the blocks teach the boilerplate learner, then blocks
   known as site boilerplate are dropped;
2. exact-duplicate fast path: a page whose remaining text hashes like an indexed page's is its
   duplicate with similarity 1.0 (sec. 3.9.1), without shingling;
3. shingles -> minhash signature -> band keys; fewer than ``min_shingles`` shingles (repeats
   counted): no signature, so never compared by similarity: ``no_content``, unless its text, its
   opening or its headline finds a cluster, or its opening or headline founds one (:mod:`.keyed`);
4. candidates = indexed pages sharing a band; each verified (:mod:`.verification`): its Jaccard
   similarity and its containment, estimated from the signatures (or exact, on stored shingle
   sets), against the two thresholds;
5. the decision: ``duplicate`` of the most similar matching candidate (ties: the earliest), in that
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

import dataclasses
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .banding import Banding
from .boilerplate import BoilerplateLearner
from .clock import FileClock
from .config import DedupConfig
from .decision import (
    DUPLICATE,
    HEADLINE,
    NO_CONTENT,
    OPENING,
    UNIQUE,
    Decision,
    Match,
    Status,
    cluster_name,
    decide,
)
from .index import IndexEntry, LSHIndex, WindowIndex
from .keyed import NO_BAND_KEYS, band_keys_of, empty_signature, is_keyed, keyed_only
from .names import NO_NAMES, NO_SLOTS, NameSketch, sketch_from
from .opening import holds_earlier_opening, joins_by_opening, lies_in_earlier_opening
from .page import Page
from .prepare import PreparedPage, Preparer, SignedPage
from .roundup import is_roundup
from .scheme import Scheme, check_compatible
from .verification import Measures, measure, measure_sets
from .wording import different_items, worded_apart

__all__ = [
    "DUPLICATE",
    "NO_CONTENT",
    "UNIQUE",
    "Decision",
    "DedupConfig",
    "Deduplicator",
    "PreparedPage",
    "SignedPage",
    "Status",
    "export_state",
    "import_state",
]

OWN_CLOCK = object()  # "read by the engine's own file clock", where None means "no clock yet"


class Deduplicator:
    """Sequential near-duplicate detection over a stream of pages (see the module doc).

    The kernel in one process: the :class:`.prepare.Preparer`, one boilerplate learner, one
    :class:`.index.LSHIndex` and :func:`.decision.decide`. :meth:`process_batch` gives exactly the
    decisions that :meth:`process` gives page by page; it only does the numeric work (shingles,
    signatures, band keys) for the whole batch at once.

    Args:
        config: the engine's settings.
        open_index: opens the store of the window for the engine's scheme and banding (default: in
            memory, :class:`.index.LSHIndex`); ``stream_lsh.stores.disk_index`` keeps it on disk.
    """

    def __init__(
        self,
        config: DedupConfig | None = None,
        *,
        open_index: Callable[[Scheme, Banding], WindowIndex] | None = None,
    ) -> None:
        self.config = config = config or DedupConfig()
        self.preparer = Preparer(config)
        self.rule = config.verification()
        self.scheme = self.preparer.scheme
        self.banding = self.preparer.banding
        self.index: WindowIndex = (
            open_index(self.scheme, self.banding)
            if open_index is not None
            else LSHIndex(self.scheme, self.banding, bucket_cap=config.bucket_cap, ttl=config.ttl)
        )
        self.learner = (
            BoilerplateLearner(min_pages=config.boilerplate_min_pages) if config.boilerplate else None
        )
        self.file_clock = FileClock(max_future=config.max_future)  # the clock of pages given without one
        self.dates_ignored: Counter[str] = (
            Counter()
        )  # indexed pages whose published_at was not used, by reason
        # candidates checked: "verified" (their resemblance makes them a match) or "rejected"
        # (LSH false positives), for the stream's metrics
        self.checks: Counter[str] = Counter()

    @property
    def clock_ms(self) -> int | None:
        """The newest clock seen: it moves the window."""
        return self.index.clock_ms

    # -- the kernel's steps ---------------------------------------------------------------------
    def prepare(self, page: Page, clock_ms: int | None, *, learn: bool = False) -> PreparedPage:
        """Extract the page's text, drop boilerplate blocks (with ``learn``, the page's blocks first
        teach the learner), hash what is left."""
        return self.preparer.prepare_page(page, clock_ms, self.learner, learn=learn)

    def sign(self, prepared: Sequence[PreparedPage]) -> list[SignedPage]:
        """Shingle, minhash and band a batch of prepared pages."""
        return self.preparer.sign(prepared)

    # -- decisions --------------------------------------------------------------------------
    def process(self, page: Page, clock_ms: int | object | None = OWN_CLOCK) -> Decision:
        """Decide on one page and add it to the index (see the module doc). ``clock_ms``: when it was
        read (None: before a file's clock started); by default the engine's own file clock reads it."""
        clocks = None if clock_ms is OWN_CLOCK else [clock_ms if isinstance(clock_ms, int) else None]
        return self.process_batch([page], clocks)[0]

    def process_batch(
        self, pages: Sequence[Page], clocks: Sequence[int | None] | None = None
    ) -> list[Decision]:
        """Decide on pages in order, as :meth:`process` would one by one.

        ``clocks``: when each page was read (:mod:`.clock`); without them, the engine's own
        :class:`~.clock.FileClock` reads the pages as lines of one file.
        """
        return [decision for _, decision in self.process_batch_prepared(pages, clocks)]

    def process_batch_prepared(
        self, pages: Sequence[Page], clocks: Sequence[int | None] | None = None
    ) -> list[tuple[PreparedPage, Decision]]:
        """:meth:`process_batch`, each decision with the page as prepared for it: its clock and
        event time, by which the spread of clusters is followed (:mod:`.spread`), without reading
        the page again."""
        if clocks is None:
            clocks = [self.file_clock.tick(page.date, page.site) for page in pages]
        signed = self.prepare_and_sign(pages, clocks)
        return list(zip((page.prepared for page in signed), self.decide_signed(signed), strict=True))

    def prepare_and_sign(self, pages: Sequence[Page], clocks: Sequence[int | None]) -> list[SignedPage]:
        """The text half of :meth:`process_batch`: each page prepared in order, teaching the learner
        first, then the batch signed at once (batch's signing processes run it too)."""
        return self.sign(
            [self.prepare(page, clock, learn=True) for page, clock in zip(pages, clocks, strict=True)]
        )

    def decide_signed(self, pages: Sequence[SignedPage]) -> list[Decision]:
        """Decide on signed pages in order and index them: the decision half of
        :meth:`process_batch`, one micro-batch for the window's store (read at once, written at once)."""
        self.index.prefetch(
            [page.prepared.id for page in pages],
            [page.prepared.content_hash for page in pages]
            + [page.opening for page in pages if page.opening]
            + [page.headline for page in pages if page.headline]
            + [page.site_headline for page in pages if page.site_headline],
            [page.band_keys for page in pages if page.band_keys is not None],
        )
        decisions = [self.process_signed(page) for page in pages]
        self.index.commit()
        return decisions

    def probe(self, page: Page) -> Decision:
        """Decide on a page without indexing it or learning from it (a query-only lookup)."""
        return self._decide(self.sign([self.prepare(page, self.clock_ms)])[0])

    def query_signed(self, page: SignedPage) -> Decision:
        """A signed query's answer: the decision the page would get now, without indexing it; a
        query founds no cluster, so a unique answer names none."""
        return self._decide(page, founds=False)

    def remove(self, page_id: str) -> bool:
        """Retract a page from the index; False if it was not indexed."""
        removed = self.index.remove(page_id)
        self.index.commit()
        return removed

    def process_signed(self, page: SignedPage) -> Decision:
        """Decide on a signed page and index it, without the store's batching (:meth:`decide_signed`
        reads and writes a micro-batch at once)."""
        prepared = page.prepared
        self.index.advance(
            prepared.clock_ms
        )  # first: a redelivery after its page left the window is a new page
        known = self.index.get(prepared.id)
        if known is not None and known.decision is not None:
            if known.body_hash == prepared.body_hash:  # a redelivery: the same answer, nothing changes
                return dataclasses.replace(known.decision, replayed=True)
            self.index.remove(known.id)  # a new version replaces the old one
        decision = self._decide(page)
        if prepared.time.date_ignored is not None:
            self.dates_ignored[prepared.time.date_ignored] += 1
        if page.signed or (
            decision.cluster_id is not None and is_keyed(page, self.preparer.no_text)
        ):  # else nothing finds it
            self._insert(page, decision)
        return decision

    def _decide(self, page: SignedPage, *, founds: bool = True) -> Decision:
        """The index's candidates, verified, handed to the decision rule; a notice has none."""
        prepared = page.prepared
        if prepared.notice is not None:
            return Decision(
                prepared.id, NO_CONTENT, None, date_ignored=prepared.time.date_ignored, notice=prepared.notice
            )
        exact = self.index.exact(prepared.content_hash)
        candidates: list[Match] = []
        neighbours = None
        headline = self._headline(page) if exact is None else None
        if exact is None and page.band_keys is not None:
            entries = _with_headline(self.index.query(page.band_keys, self.scheme.fingerprint), headline)
            if entries:
                neighbours = _Neighbours(self, page, entries)
                candidates = neighbours.measured(entries)
        opening, joined_by = self._opening(page, headline) if exact is None else (None, OPENING)
        matched = any(self.rule.match(c.similarity, c.contained) for c in candidates)
        opened_by, opened_how = (
            (None, OPENING)
            if exact is not None or opening is not None or matched
            else self._opened_by(page, headline)
        )
        roundup = prepared.listing or self._roundup(
            page, candidates, matched or opening is not None or opened_by is not None
        )
        decision = decide(
            prepared.id,
            signed=page.signed,
            exact=None
            if exact is None
            else Match(
                exact.id,
                1.0,
                exact.cluster_id,
                roundup=_decided_roundup(exact),
                other_site=_other_site(page, exact),
            ),
            candidates=candidates,
            rule=self.rule,
            founds=cluster_name(prepared.id, self.index.clusters) if founds else None,
            neighbours=neighbours,
            opening=opening,
            roundup=roundup,
            listing=prepared.listing,
            joined_by=joined_by,
            opened_by=opened_by,
            opened_how=opened_how,
            keyed=is_keyed(page, self.preparer.no_text),
        )
        self.checks["verified"] += decision.verified
        self.checks["rejected"] += len(candidates) - decision.verified
        if decision.refused_by is not None:
            self.checks["refused"] += 1
        if roundup:
            self.checks["roundups"] += 1
            decision = dataclasses.replace(decision, roundup=True)
        ignored = prepared.time.date_ignored
        return decision if ignored is None else dataclasses.replace(decision, date_ignored=ignored)

    def _roundup(self, page: SignedPage, candidates: Sequence[Match], could_join: bool) -> bool:
        """Whether the page opens several earlier stories (:mod:`.roundup`); asked of the window
        only when the page ``could_join`` a cluster at all (a candidate matches, or an opening
        would take it)."""
        if not page.sentence_openings or not could_join:
            return False
        resembled = {c.id for c in candidates}
        opened: set[str] = set()
        for key in page.sentence_openings:
            entry = self.index.opening(key)
            if entry is None or entry.id == page.prepared.id:
                continue
            if key != page.opening or entry.id in resembled:  # else a stock line (.roundup)
                opened.add(entry.cluster_id)
                if is_roundup(opened):
                    return True
        return False

    def _headline(self, page: SignedPage) -> IndexEntry | None:
        """The earliest other indexed page with the page's headline, if any (:mod:`.headline`),
        unless the two set other names in the same wording (:func:`.wording.worded_apart`): a
        department's tender notices, each with its own reference, under one title. Pages named
        apart still join so (a story's versions under one headline; refused, the twenty-first
        outside set lost 0.015 of F1)."""
        entry = self.index.opening(page.headline) if page.headline else None
        if entry is None or entry.id == page.prepared.id:
            return None
        return None if worded_apart(page.prepared.names, entry.names) else entry

    def _opening(self, page: SignedPage, headline: IndexEntry | None) -> tuple[Match | None, str]:
        """The earlier page a short page may join by where it begins, and how it was found: the
        page it opens like (:mod:`.opening`), measured against the page when the page is signed;
        else ``headline``, the page with its headline (:mod:`.headline`), which needs no shared
        text."""
        entry = self.index.opening(page.opening_asked) if page.opening_asked else None
        if entry is not None and entry.id != page.prepared.id:
            match = self._measured(page, entry)
            if joins_by_opening(page.short, match.of_page):
                return match, OPENING
        if headline is None or not page.short:
            return None, OPENING
        if keyed_only(headline) and self._own_site(page, headline):
            return None, OPENING  # two short pages of a site under one title: a weather page, a live page
        return self._measured(page, headline), HEADLINE

    def _opened_by(self, page: SignedPage, headline: IndexEntry | None) -> tuple[Match | None, str]:
        """The earlier page that a page of ordinary length joins when nothing else takes it, and
        how it was found: the smaller page it opens like and holds, with the share of that page
        lying in it as its containment (:mod:`.opening`: a story after its teaser), or the larger
        one it opens like and lies in (a brief after its story); else
        ``headline``, the earliest page with its headline, when another site gave it
        (:mod:`.headline`: a story after a card whose deck it does not hold) or the page is page 2
        or later of an article (:func:`.headline.later_part`); else None."""
        if page.short or page.signature is None:
            return None, OPENING
        entry = self.index.opening(page.opening) if page.opening else None
        if entry is not None and entry.id != page.prepared.id:
            match = self._measured(page, entry)
            if not match.measured:  # a keyed page's article is its opening: the page begins with it
                return (match if self.rule.containment is not None else None), OPENING
            if holds_earlier_opening(match.of_page, match.of_candidate, self.rule.containment):
                return match._replace(containment=match.of_candidate), OPENING
            if lies_in_earlier_opening(
                match.of_page, match.of_candidate, self.rule.containment
            ) and not worded_apart(page.prepared.names, entry.names):
                return match._replace(containment=match.of_page), OPENING
        if headline is None:
            return None, OPENING
        if self._own_site(page, headline) and not page.prepared.part:  # another story under its title
            return None, OPENING
        return self._measured(page, headline), HEADLINE

    def _own_site(self, page: SignedPage, headline: IndexEntry) -> bool:
        """Whether the earliest page with the page's headline may be of the page's own site: it is
        its site's earliest page with it, or the page has no site to tell (:mod:`.headline`)."""
        if not page.site_headline:
            return True
        own = self.index.opening(page.site_headline)
        return own is not None and own.id == headline.id

    def _measured(self, page: SignedPage, entry: IndexEntry) -> Match:
        """How the page resembles one entry; an unsigned page has nothing to measure, and the
        decision gives it no similarity (``of_page`` None), nor a keyed page's entry (:mod:`.keyed`)."""
        roundup, other_site = _decided_roundup(entry), _other_site(page, entry)
        if page.signature is None:
            return Match(entry.id, 0.0, entry.cluster_id, roundup=roundup, other_site=other_site)
        if keyed_only(entry):
            return Match(
                entry.id, 0.0, entry.cluster_id, roundup=roundup, measured=False, other_site=other_site
            )
        (match,) = _Neighbours(self, page, [entry]).measured([entry], sizes=False)
        return match

    def measure(
        self, signature: np.ndarray, shingles: np.ndarray | None, candidates: Sequence[IndexEntry]
    ) -> Measures:
        """How a page (its signature, or its shingle set when verification is exact) resembles
        each candidate: Jaccard similarity and containment, and the shares of each in the other
        (for the fuller-member check, .fuller)."""
        if self.config.verify == "jaccard" and shingles is not None:
            return measure_sets(shingles, [c.shingles for c in candidates])
        return measure(signature, np.stack([c.signature for c in candidates]))

    def _insert(self, page: SignedPage, decision: Decision) -> None:
        prepared = page.prepared
        exact = self.index.exact(prepared.content_hash)
        signature, band_keys, shingles = page.signature, page.band_keys, page.shingles
        if exact is not None:  # share the original's arrays: same text, same signature
            signature, band_keys, shingles = exact.signature, exact.band_keys, exact.shingles
        if signature is None or band_keys is None:  # a keyed page: found by its keys only
            signature, band_keys = empty_signature(self.scheme.num_perm), NO_BAND_KEYS
        self.index.insert(
            IndexEntry(
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
                # a roundup opens like one of its stories, not like itself: it claims no opening,
                # so a card of that story that comes after it opens the story's cluster (.roundup)
                opening=0 if decision.roundup else page.opening,
                headline=page.headline,
                site_headline=page.site_headline,
                site=prepared.site,
                names=prepared.names,
            )
        )


def _decided_roundup(entry: IndexEntry) -> bool:
    """Whether an indexed page was decided a roundup (:mod:`.roundup`)."""
    return entry.decision is not None and entry.decision.roundup


def _other_site(page: SignedPage, entry: IndexEntry) -> bool:
    """Whether an indexed page is of another site than the page, both sites known."""
    mine = page.prepared.site
    return bool(mine and entry.site and entry.site != mine)


def _with_headline(entries: list[IndexEntry], headline: IndexEntry | None) -> list[IndexEntry]:
    """The band candidates, and after them the earliest page with the page's headline when no band
    found it (:mod:`.headline`: a brief its story's bands never reach)."""
    if headline is None or keyed_only(headline) or any(found.id == headline.id for found in entries):
        return entries  # a keyed page has nothing to measure: it is no candidate (.keyed)
    return [*entries, headline]


class _Neighbours:
    """The window around one page, for the fuller-member check (:mod:`.fuller`): its candidates,
    and the pages they were decided copies of, read and measured against the page only when the
    check asks."""

    def __init__(self, engine: Deduplicator, page: SignedPage, entries: list[IndexEntry]) -> None:
        assert page.signature is not None
        self.engine, self.page, self.signature = engine, page, page.signature
        self.entries = {entry.id: entry for entry in entries}

    def measured(self, entries: Sequence[IndexEntry], *, sizes: bool = True) -> list[Match]:
        """The entries as the rule sees them, measured against the page: one that is another item
        of a template (:mod:`.names`, :mod:`.wording`) matches it by no similarity or containment;
        with ``sizes``, its shares still say how large each is, for the fuller-member check
        (.fuller: a fuller member that refuses the page need not resemble it), without ``sizes``
        not (an opening joins by them, .opening)."""
        found = self.engine.measure(self.signature, self.page.shingles, entries)
        names = self.page.prepared.names
        return [
            Match(
                entry.id,
                0.0 if apart else j,
                entry.cluster_id,
                0.0 if apart else k,
                0.0 if apart and not sizes else p,
                0.0 if apart and not sizes else q,
                _decided_roundup(entry),
                other_site=_other_site(self.page, entry),
            )
            for entry, j, k, p, q in zip(entries, *found, strict=True)
            for apart in (different_items(names, entry.names),)
        ]

    def agree(self, first: Match, second: Match) -> bool:
        one, other = self.entries[first.id], self.entries[second.id]
        pair = self.engine.measure(one.signature, one.shingles, [other])
        return self.engine.rule.match(pair.jaccard[0], pair.containment[0]) is not None

    def original(self, member: Match) -> tuple[Match, str | None] | None:
        decision = self.entries[member.id].decision
        if decision is None or decision.duplicate_of is None:
            return None
        entry = self.entries.get(decision.duplicate_of) or self.engine.index.get(decision.duplicate_of)
        if entry is None or entry.id == self.page.prepared.id or keyed_only(entry):
            return None
        self.entries[entry.id] = entry
        (match,) = self.measured([entry])
        return match, self.engine.rule.match(match.similarity, match.contained)


#: 4: the buckets of all bands in one table (3 kept one table per band; read and migrated).
STATE_FORMAT = 4


def export_state(dedup: Deduplicator) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The engine's state as a JSON-friendly header plus numpy arrays (no I/O here).

    Entries are listed in insertion order, so re-inserting them rebuilds identical buckets
    (including which ids a full bucket has pushed out) and the same expiry order.
    """
    index = _in_memory(dedup)
    entries = list(index)
    header = {
        "format": STATE_FORMAT,
        "scheme": dedup.scheme.to_dict(),
        "banding": [dedup.banding.bands, dedup.banding.rows],
        "clock": dedup.clock_ms,
        "file_clock": dedup.file_clock.state(),
        "ids": [e.id for e in entries],
        "clusters": [e.cluster_id for e in entries],
        "decisions": [e.decision.to_dict() for e in entries if e.decision is not None],
        "learner": dedup.learner.state() if dedup.learner is not None else None,
        "tables": index.export_tables(),
    }
    width = dedup.scheme.num_perm
    shingles = [e.shingles if e.shingles is not None else np.zeros(0, np.uint64) for e in entries]
    arrays = {
        "signatures": np.stack([e.signature for e in entries])
        if entries
        else np.zeros((0, width), np.uint32),
        "event_times": np.array(
            [np.nan if e.event_time is None else e.event_time for e in entries], dtype=np.float64
        ),
        "content_hashes": np.array([e.content_hash for e in entries], dtype=np.uint64),
        "body_hashes": np.array([e.body_hash for e in entries], dtype=np.uint64),
        "openings": np.array([e.opening for e in entries], dtype=np.uint64),
        "headlines": np.array([e.headline for e in entries], dtype=np.uint64),
        "site_headlines": np.array([e.site_headline for e in entries], dtype=np.uint64),
        "sites": np.array([e.site for e in entries], dtype=np.uint64),
        "shingle_counts": np.array([s.size for s in shingles], dtype=np.int64),
        "shingles": np.concatenate(shingles) if shingles else np.zeros(0, np.uint64),
        "name_counts": np.array([e.names.count for e in entries], dtype=np.int64),
        "name_sizes": np.array([e.names.hashes.size for e in entries], dtype=np.int64),
        "names": np.concatenate([e.names.hashes for e in entries]) if entries else np.zeros(0, np.uint32),
        "slot_sizes": np.array([e.names.slots.size for e in entries], dtype=np.int64),
        "slots": np.concatenate([e.names.slots for e in entries]) if entries else NO_SLOTS,
    }
    return header, arrays


def import_state(dedup: Deduplicator, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Load state exported by :func:`export_state` into an empty engine; refuse another scheme."""
    if header.get("format") == 3:
        header = _migrate_from_3(header)
    if header.get("format") != STATE_FORMAT:
        raise ValueError(
            f"unsupported state format {header.get('format')!r} (this version reads 3 and {STATE_FORMAT})"
        )
    check_compatible(dedup.scheme, Scheme.from_dict(header["scheme"]), what="saved state")
    dedup.banding.check_saved(header["banding"], "saved state")
    if len(dedup.index):
        raise ValueError("state can only be loaded into an empty engine")
    offsets = np.concatenate([[0], np.cumsum(arrays["shingle_counts"])])
    keep_shingles = dedup.config.verify == "jaccard"
    openings = arrays.get("openings")  # absent from state saved before openings were kept
    headlines = arrays.get("headlines")  # ... and before headlines were
    site_headlines = arrays.get("site_headlines")  # ... and before headlines at their site were
    sites = arrays.get("sites")  # ... and before sites were
    names = _names(arrays)  # ... and before names were
    entries = []
    for i, page_id in enumerate(header["ids"]):
        signature = arrays["signatures"][i].copy()
        entries.append(
            IndexEntry(
                id=page_id,
                signature=signature,
                band_keys=band_keys_of(signature, dedup.banding),
                cluster_id=header["clusters"][i],
                event_time=None if np.isnan(arrays["event_times"][i]) else float(arrays["event_times"][i]),
                content_hash=int(arrays["content_hashes"][i]),
                scheme=dedup.scheme.fingerprint,  # checked against the header above
                body_hash=int(arrays["body_hashes"][i]),
                shingles=arrays["shingles"][offsets[i] : offsets[i + 1]].copy() if keep_shingles else None,
                decision=Decision.from_dict(header["decisions"][i]),
                opening=0 if openings is None else int(openings[i]),
                headline=0 if headlines is None else int(headlines[i]),
                site_headline=0 if site_headlines is None else int(site_headlines[i]),
                site=0 if sites is None else int(sites[i]),
                names=names[i] if names is not None else NO_NAMES,
            )
        )
    _in_memory(dedup).restore(entries, header["tables"], header["clock"])
    dedup.file_clock.load_state(header["file_clock"])
    if dedup.learner is not None and header.get("learner") is not None:
        dedup.learner.load_state(header["learner"])


def _names(arrays: dict[str, np.ndarray]) -> list[NameSketch] | None:
    """Each entry's names and slots, from the state's arrays (None: saved before names were kept;
    no slots: saved before they were)."""
    if "names" not in arrays:
        return None
    counts = arrays["name_counts"].tolist()
    bounds = np.concatenate([[0], np.cumsum(arrays["name_sizes"])]).tolist()
    slot_bounds = np.concatenate(
        [[0], np.cumsum(arrays.get("slot_sizes", np.zeros(len(counts), np.int64)))]
    ).tolist()
    hashes, slots = arrays["names"], arrays.get("slots", NO_SLOTS)
    return [
        sketch_from(hashes[bounds[i] : bounds[i + 1]], int(count), slots[slot_bounds[i] : slot_bounds[i + 1]])
        for i, count in enumerate(counts)
    ]


def _in_memory(dedup: Deduplicator) -> LSHIndex:
    """The engine's window, which a state file holds: one in memory (a window on disk is its own
    saved state)."""
    if not isinstance(dedup.index, LSHIndex):
        raise ValueError("a state file holds a window in memory; this engine keeps its window on disk")
    return dedup.index


def _migrate_from_3(header: dict[str, Any]) -> dict[str, Any]:
    """Format 3 kept one bucket table per band; band keys mix in their band, so they merge into one."""
    per_band = header["tables"]["buckets"]
    tables = {**header["tables"], "buckets": [bucket for table in per_band for bucket in table]}
    return {**header, "format": STATE_FORMAT, "tables": tables}
