"""The page preparer: a page in, an immutable signed page out; the same steps in batch and stream.

1. the page's visible text as normalised blocks (:meth:`Preparer.blocks`; stateless, so the stream
   does it where a page comes in);
2. boilerplate: the blocks teach the site's learner, then blocks known as boilerplate are dropped
   (:func:`drop_boilerplate`; the learner is passed in, because the stream keeps one per site
   partition and batch one per engine);
3. the text left is hashed: its content hash is the exact-duplicate key (MMDS sec. 3.9.1);
4. shingles, minhash signature and band keys, for a batch of pages at once (:meth:`Preparer.sign`);
   a page with fewer than ``min_shingles`` shingles stays unsigned (``no_content``).

The preparer holds only what is fixed by the configuration (the scheme, the hashers, the
banding), never state that depends on the pages: that lives in the learner and the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

import numpy as np
import xxhash

from .banding import Banding
from .boilerplate import BoilerplateLearner
from .clock import EventTime, event_time
from .config import DedupConfig
from .embedded import data_article_html, json_card_html
from .feed import feed_document, feed_item_html
from .hashing import TokenHasher, word_indexes_in, words, xxh64_text
from .headline import from_headline, headline_key, headline_text, later_part, site_headline_key
from .lead import LEAD_RULE, with_lead
from .minhash import MinHasher
from .names import NAMES_RULE, NO_NAMES, NO_SLOTS, NameSketch, name_hashes, sketch_of
from .notice import notice_kind
from .opening import openings, sentence_openings
from .page import Page, address_key, site_key
from .roundup import is_listing, is_section, lists_stories
from .scheme import Scheme
from .shingles import ShingleBatch, ShingleKind, Shingler
from .stopwords import StopWordLists
from .text import (
    article_start,
    flattened,
    heading,
    html_blocks,
    kicker,
    normalize_blocks,
    sentence_starts,
    sentences,
    text_blocks,
    without_lists,
)
from .wording import WORDING_RULE, page_slots, slot_hashes

__all__ = ["Extracted", "PreparedPage", "Preparer", "SignedPage", "drop_boilerplate"]

_BLOCK_SEED = 0x5EED_B10C  # block fingerprints are internal to the learner: not part of the scheme


def _block_fingerprint(block: str) -> int:
    return xxhash.xxh3_64_intdigest(block.encode("utf-8", "surrogatepass"), _BLOCK_SEED)


@dataclass(frozen=True)
class PreparedPage:
    """A page after the text steps, before signing."""

    id: str
    lang: str | None
    clock_ms: int | None  # when the page was read (see .clock); None before a file's clock starts
    time: EventTime
    text: str
    content_hash: int  # of the text left after boilerplate removal: the exact-duplicate key
    body_hash: int  # of the raw body: recognises a redelivered page
    blocks_dropped: int = 0  # blocks dropped as boilerplate (a metric of the stream)
    lead_at: int = 0  # where the article begins in ``text``, in the shingler's tokens (see .lead)
    flattened: bool = False  # its text held a whole article on one line (.text.flattened; batch only)
    # where each paragraph of prose begins and ends in ``text``, in UTF-8 bytes
    prose_spans: tuple[tuple[int, int], ...] = ()
    dropped_starts: tuple[str, ...] = ()  # the first words of each paragraph of prose dropped as boilerplate
    headline: int = 0  # its headline key (.headline); 0: none
    notice: str | None = None  # the kind of notice it is (.notice): it has no article
    listing: bool = False  # its blocks are a listing of stories, so it is a roundup (.roundup)
    site_headline: int = 0  # its headline key at its site (.headline.site_headline_key); 0: none
    site: int = 0  # its site's key (.page.site_key); 0: no site
    part: bool = False  # page 2 or later of an article (.headline.later_part): joins it by its headline
    names: NameSketch = NO_NAMES  # the names its article gives (.names)


class Extracted(NamedTuple):
    """A page's visible text as normalised blocks, whether it came flattened onto one line, its
    headline key (.headline; 0: none), whether it is a listing of stories (.roundup): a feed
    document of several (.feed), or a page whose blocks, before any is cut, list them, and whether
    it is page 2 or later of an article (.headline.later_part)."""

    blocks: list[str]
    flattened: bool
    headline: int = 0
    listing: bool = False
    part: bool = False
    names: list[tuple[int, ...]] | None = None  # each block's names, hashed (.names)
    address: int = 0  # where it was fetched (.page.address_key): a page fetched again is the same page
    slots: list[tuple[int, ...]] | None = None  # each block's slots: its names' wording (.wording)


@dataclass(frozen=True, eq=False)
class SignedPage:
    """A prepared page with its signature and band keys (None for both: too few shingles)."""

    prepared: PreparedPage
    signature: np.ndarray | None
    band_keys: np.ndarray | None
    shingles: np.ndarray | None  # the shingle set, kept only to verify by exact Jaccard
    opening: int = 0  # its opening key (.opening); 0: too few shingles to have one
    short: bool = False  # all lead: it may join the earlier page it opens like (.opening)
    sentence_openings: tuple[int, ...] = ()  # the opening key at each sentence (.roundup)

    @property
    def id(self) -> str:
        return self.prepared.id

    @property
    def headline(self) -> int:
        """Its headline key (.headline); 0: none."""
        return self.prepared.headline

    @property
    def site_headline(self) -> int:
        """Its headline key at its site (.headline.site_headline_key); 0: none."""
        return self.prepared.site_headline

    @property
    def signed(self) -> bool:
        return self.signature is not None

    @property
    def opening_asked(self) -> int:
        """The opening key to look up in the window: a short page's; 0 for a page of ordinary
        length, which never joins by its opening (.opening)."""
        return self.opening if self.short else 0


def drop_boilerplate(
    blocks: list[str], learner: BoilerplateLearner | None, site: str, *, learn: bool, address: int = 0
) -> tuple[list[int], list[int]]:
    """Which blocks are left once the boilerplate known for ``site`` is dropped (their indexes),
    and the blocks this page made boilerplate.

    With ``learn``, the blocks first teach the learner, so the page is already filtered with what
    it showed (the learner never looks at decisions: a page can be prepared before the pages
    before it are decided). ``address``: where the page was fetched (.page.address_key; 0: unknown).
    """
    if learner is None:
        return list(range(len(blocks))), []
    sizes = [block.count(" ") + 1 for block in blocks]  # words
    fingerprints = learner.fingerprints(blocks, sizes, _block_fingerprint)
    known = learner.known_for(site)
    fresh = [f is not None and not known(f) for f in fingerprints]  # learnable, not boilerplate yet
    flagged: list[int] = []
    if learn:
        taught = [(f, n) for f, n, new in zip(fingerprints, sizes, fresh) if new and f is not None]
        flagged = learner.observe(site, [f for f, _ in taught], [n for _, n in taught], address=address)
    dropped = set(flagged)  # this page made them boilerplate of its site
    return [
        i for i, (f, new) in enumerate(zip(fingerprints, fresh)) if f is None or (new and f not in dropped)
    ], flagged


def _names(
    names: Sequence[Sequence[int]] | None,
    slots: Sequence[Sequence[int]] | None,
    kept_at: list[int],
    learner: BoilerplateLearner | None,
) -> NameSketch:
    """The names of the blocks a page keeps (.names) and the wording they are set in (.wording);
    none without a learner, whose absence leaves a site's chrome, which names the site, in every
    page. Either may be absent where the other is not: the stream sends no names for a page none
    of whose blocks gives one, while its lead may still set some (after a colon, a quote)."""
    if learner is None:
        return NO_NAMES
    hashes = [h for i in kept_at for h in names[i]] if names else []
    return sketch_of(hashes, page_slots(slots[i] for i in kept_at) if slots else NO_SLOTS)


def _prose_spans(blocks: list[str], starts: list[int]) -> tuple[tuple[int, int], ...]:
    """Where each paragraph of prose (a block that is not a heading) begins and ends in the page's
    text (its blocks joined by spaces), in UTF-8 bytes (``starts``: where each block begins, and
    one past the text's end)."""
    return tuple((starts[i], starts[i + 1] - 1) for i, block in enumerate(blocks) if not heading(block))


#: The words of a dropped paragraph's start that its opening key is computed from.
DROPPED_START_WORDS = 24


def _dropped_starts(blocks: list[str], kept: list[str]) -> tuple[str, ...]:
    """The first words of each paragraph of prose the learner dropped (``kept``: the blocks left,
    in order): a site's front page repeats the openings of its stories from one version to the
    next, and the learner drops them."""
    if len(kept) == len(blocks):
        return ()
    dropped: list[str] = []
    left = iter(kept)
    following = next(left, None)
    for block in blocks:
        if block is following:
            following = next(left, None)
        elif not heading(block):
            dropped.append(" ".join(block.split(" ", DROPPED_START_WORDS)[:DROPPED_START_WORDS]))
    return tuple(dropped)


def _split(batch: ShingleBatch, pages: int) -> tuple[ShingleBatch, ShingleBatch]:
    """The first ``pages`` texts of a shingle batch, and the rest, as two batches (views)."""
    cut = int(batch.offsets[pages])
    starts = batch.starts
    return (
        ShingleBatch(
            batch.values[:cut], batch.offsets[: pages + 1], None if starts is None else starts[:cut]
        ),
        ShingleBatch(
            batch.values[cut:], batch.offsets[pages:] - cut, None if starts is None else starts[cut:]
        ),
    )


def _with_dropped(
    held: list[tuple[int, ...]], owners: list[int], dropped: ShingleBatch
) -> list[tuple[int, ...]]:
    """Each page's sentence openings, followed by the openings of the paragraphs of prose its
    site's boilerplate took out (``dropped``: their first words, the paragraph of page
    ``owners[i]`` as text i; :func:`_dropped_starts`, :mod:`.roundup`)."""
    if not owners:
        return held
    keys, _ = openings(dropped)
    found = [list(keys_of_page) for keys_of_page in held]
    for owner, key in zip(owners, keys.tolist(), strict=True):
        if key and key not in found[owner]:
            found[owner].append(key)
    return [tuple(keys_of_page) for keys_of_page in found]


class Preparer:
    """The stateless steps of the kernel, built once from the configuration."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        hasher = TokenHasher(seed=config.seed)
        stop_words = (
            StopWordLists.load(config.languages) if config.shingles.kind is ShingleKind.STOPWORD else None
        )
        self.shingler = Shingler(config.shingles, hasher, stop_words)
        self.minhasher = MinHasher(num_perm=config.num_perm, seed=config.seed)
        self.banding: Banding = config.banding()
        self.scheme = Scheme(
            shingles=config.shingles.kind.value,
            shingle_size=config.shingles.size,
            num_perm=config.num_perm,
            seed=config.seed,
            stop_words_source=stop_words.source if stop_words else "",
            stop_words_digest=stop_words.digest if stop_words else "",
            stop_words_languages=stop_words.languages if stop_words else (),
            lead_share=config.lead_share,
            lead_rule=LEAD_RULE if config.lead_share else "",
            names_rule=f"{NAMES_RULE}+{WORDING_RULE}",
        )
        self.no_text = xxh64_text("", config.seed)  # the content hash of a page with no text left

    def extract(self, page: Page) -> Extracted:
        """The page's visible text as normalised blocks (empty ones dropped; a feed item or a JSON
        card read as the card it is, :mod:`.feed`, :mod:`.embedded`; a script-built page as the
        article in its data), with ``drop_chrome`` without the sentences
        before its headline (:func:`.headline.from_headline`) and without lists of headlines, long
        blocks in sentences."""
        markup, text = page.html, page.text
        body = markup if markup is not None else text
        document = feed_document(body)
        card = None if document else feed_item_html(body) or json_card_html(body)
        if card is not None:
            markup, text = card, None
        if markup is not None:
            raw_blocks = html_blocks(markup, drop_chrome=self.config.drop_chrome)
            data = data_article_html(markup, raw_blocks)
            if data is not None:  # a script-built page: its article is in its data (.embedded)
                raw_blocks = html_blocks(data, drop_chrome=self.config.drop_chrome)
        else:
            raw_blocks = text_blocks(text or "")
        headline = headline_text(title=page.title, html=markup, text=text, site=page.site)
        key = headline_key(headline, url=page.url, site=page.site, seed=self.config.seed)
        listing = (
            document
            or lists_stories(page.url)
            or is_section(page.url, headline, raw_blocks, page.site)
            or is_listing(raw_blocks)
        )
        if self.config.drop_chrome:
            raw_blocks = without_lists(from_headline(raw_blocks, headline, key))
        pieces = [piece for block in raw_blocks for piece in sentences(block)]
        part = later_part(headline, page.url)
        normalized = normalize_blocks(pieces, keep_empty=True)
        if len(normalized) != len(pieces):  # a piece held a line break: normalise one at a time
            normalized = [" ".join(normalize_blocks([piece])) for piece in pieces]
        kept = [i for i, block in enumerate(normalized) if block]
        # names are taken from the blocks the learner keeps: none without it (_names)
        names = slots = None
        if self.config.boilerplate:
            article, seed = [pieces[i] for i in kept], self.config.seed
            names, slots = name_hashes(article, seed), slot_hashes(article, seed)
        return Extracted(
            [normalized[i] for i in kept],
            flattened(raw_blocks),
            key,
            listing,
            part,
            names,
            address_key(page.url),
            slots,
        )

    def blocks(self, page: Page) -> list[str]:
        """:meth:`extract`'s blocks."""
        return self.extract(page).blocks

    def body_hash(self, page: Page) -> int:
        """Hash of the raw body: the same id with the same body is a redelivery."""
        return xxh64_text(page.html if page.html is not None else (page.text or ""), self.config.seed)

    def event_time(self, page: Page, clock_ms: int | None) -> EventTime:
        """The page's event time when read at ``clock_ms`` (:func:`.clock.event_time`)."""
        return event_time(page.date, clock_ms, window=self.config.ttl, max_future=self.config.max_future)

    def prepare(
        self,
        page_id: str,
        lang: str | None,
        blocks: list[str],
        *,
        clock_ms: int | None,
        time: EventTime,
        body_hash: int,
        learner: BoilerplateLearner | None,
        site: str,
        learn: bool,
        flattened: bool = False,
        headline: int = 0,
        listing: bool = False,
        part: bool = False,
        names: Sequence[Sequence[int]] | None = None,
        address: int = 0,
        slots: Sequence[Sequence[int]] | None = None,
    ) -> tuple[PreparedPage, list[int]]:
        """A page's text steps from its blocks (and its headline key, whether it is a listing and
        its address key, :meth:`extract`'s): the prepared page, and the blocks it made boilerplate.
        A notice (:mod:`.notice`, judged on what the site's boilerplate leaves) keeps no text.

        A listing (a front, a section, a tag page: :mod:`.roundup`) is filtered with what its site
        has learnt but teaches nothing: each of its items is a story's headline over that story's
        first sentence, which, seen beside the story's own page, read as a block in two contexts,
        and the site learnt its stories' leads as its chrome. On the nineteenth outside set the
        leads of its template items (one school's closure and another's) were cut so, which left
        their names out and joined them."""
        learn = learn and not listing
        kept_at, flagged = drop_boilerplate(blocks, learner, site, learn=learn, address=address)
        kept = [blocks[i] for i in kept_at]
        notice = notice_kind(kept) if self.config.drop_chrome else None
        if notice is not None:
            blocks_dropped = len(blocks) - len(kept)
            return PreparedPage(
                page_id, lang, clock_ms, time, "", self.no_text, body_hash, blocks_dropped, notice=notice
            ), flagged
        dropped_starts = _dropped_starts(blocks, kept)
        start = article_start(kept)
        if start < len(kept) and (label := kicker(kept[start])):  # an alert's label is no story's
            kept = [*kept[:start], kept[start][len(label) :], *kept[start + 1 :]]
        text = " ".join(kept)
        opening = kept[:start]
        starts = list(
            accumulate((len(block.encode("utf-8", "surrogatepass")) + 1 for block in kept), initial=0)
        )
        return PreparedPage(
            page_id,
            lang,
            clock_ms,
            time,
            text,
            xxh64_text(text, self.config.seed),
            body_hash,
            len(blocks) - len(kept),
            self._tokens(opening),
            flattened,
            _prose_spans(kept, starts),
            dropped_starts,
            headline,
            listing=listing,
            site_headline=site_headline_key(headline, site),
            site=site_key(site),
            part=part,
            names=_names(names, slots, kept_at, learner),
        ), flagged

    def _tokens(self, blocks: list[str]) -> int:
        """How many of the shingler's tokens these blocks hold (words; none for character
        shingles, whose lead counts from the page's start)."""
        if self.config.shingles.kind is ShingleKind.CHAR:
            return 0
        return sum(len(words(block)) for block in blocks)

    def _sentence_tokens(self, prepared: Sequence[PreparedPage]) -> list[list[int]]:
        """Where each page's sentences of prose begin (each paragraph's first, and each sentence
        after it), in the shingler's tokens, in text order; found for the whole micro-batch at
        once (none for character shingles: their opening is the page's own alone)."""
        if self.config.shingles.kind is ShingleKind.CHAR:
            return [[] for _ in prepared]
        encoded = [p.text.encode("utf-8", "surrogatepass") for p in prepared]
        text_starts = np.cumsum([0] + [len(e) + 1 for e in encoded])
        page_of_span = np.repeat(np.arange(len(prepared)), [len(p.prose_spans) for p in prepared])
        spans = np.array([span for p in prepared for span in p.prose_spans], dtype=np.int64).reshape(-1, 2)
        if not spans.size:  # no page of the batch has prose (headlines, a byline): no sentence opens
            return [[] for _ in prepared]
        begins = spans[:, 0] + text_starts[page_of_span]
        ends = spans[:, 1] + text_starts[page_of_span]
        blob = np.frombuffer(b" ".join(encoded) + b" ", dtype=np.uint8)
        found = sentence_starts(blob)
        span_of = np.searchsorted(begins, found, side="right") - 1
        inside = (
            (span_of >= 0)
            & (found < ends[np.maximum(span_of, 0)])
            & (found != begins[np.maximum(span_of, 0)])
        )
        at = np.sort(np.concatenate((begins, found[inside])))
        page_of = np.searchsorted(text_starts, at, side="right") - 1
        local = (at - text_starts[page_of]).tolist()
        bounds = np.searchsorted(page_of, np.arange(len(prepared) + 1)).tolist()
        return word_indexes_in(
            encoded, blob, [local[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        )

    def prepare_page(
        self, page: Page, clock_ms: int | None, learner: BoilerplateLearner | None, *, learn: bool
    ) -> PreparedPage:
        """:meth:`prepare` for a whole page, as batch reads it."""
        extracted = self.extract(page)
        prepared, _ = self.prepare(
            page.id,
            page.lang,
            extracted.blocks,
            clock_ms=clock_ms,
            time=self.event_time(page, clock_ms),
            body_hash=self.body_hash(page),
            learner=learner,
            site=page.site,
            learn=learn,
            flattened=extracted.flattened,
            headline=extracted.headline,
            listing=extracted.listing,
            part=extracted.part,
            names=extracted.names,
            slots=extracted.slots,
            address=extracted.address,
        )
        return prepared

    def sign(self, prepared: Sequence[PreparedPage]) -> list[SignedPage]:
        """Shingle, minhash and band a batch of prepared pages at once (the numeric work is vectorised
        over the batch); those with too few shingles stay unsigned."""
        if not prepared:
            return []
        owners = [i for i, p in enumerate(prepared) for _ in p.dropped_starts]
        everything = self.shingler.shingle_batch(
            [p.text for p in prepared] + [start for p in prepared for start in p.dropped_starts],
            [p.lang for p in prepared] + [prepared[i].lang for i in owners],
        )
        plain, dropped = _split(everything, len(prepared))
        counts = plain.counts()
        begins = [p.lead_at for p in prepared]
        batch = with_lead(plain, self.config.lead_share, begins)
        opening_keys, short = openings(plain, begins)
        held = sentence_openings(plain, self._sentence_tokens(prepared))
        held = _with_dropped(held, owners, dropped)
        signatures = self.minhasher.signatures(batch.values, batch.offsets)
        keys = self.banding.band_keys(signatures)
        keep_sets = self.config.verify == "jaccard"
        minimum = self.config.min_shingles
        return [
            SignedPage(
                p,
                signatures[i] if counts[i] >= minimum else None,
                keys[i] if counts[i] >= minimum else None,
                batch.page_set(i) if keep_sets else None,
                int(opening_keys[i]),
                bool(short[i]),
                held[i],
            )
            for i, p in enumerate(prepared)
        ]
