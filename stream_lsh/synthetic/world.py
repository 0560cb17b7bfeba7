"""The generator's world: outlets, stories and their copies, planned until the page count is reached."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from itertools import accumulate
from typing import TYPE_CHECKING

from .language import (
    _ENTITY,
    _SPELLINGS,
    COMMA_CHANCE,
    MAX_TITLE_NAMES,
    SENTENCE_TOKENS,
    SENTENCES_PER_PARAGRAPH,
    TITLE_TOKENS,
    TWO_WORD_NAME_CHANCE,
    _ascii,
    _capitalize,
    _forbidden_words,
    _fresh_word,
    _language,
    _word_count,
)
from .notices import NOTICE_KINDS, NOTICE_SHARE, notice_text
from .outlets import (
    _DOMAIN_SUFFIXES,
    _UI,
    ARCHIVE_HEADLINES,
    BRANDS,
    INLINE_LINK_CHANCE,
    MIN_OUTLETS,
    NAV_LINKS,
    NETWORK_SIZE,
    NETWORKS,
    PAGES_PER_OUTLET,
    SITE_PROSE_PARAGRAPHS,
    SITE_PROSE_TOKENS,
    STAFF_PER_OUTLET,
    _Draft,
    _Event,
    _language_weights,
    _Outlet,
    _outlet_counts,
    _Story,
)
from .shapes import NO_SHAPES, TRIMMED_KEEP_FRACTION, Shapes

if TYPE_CHECKING:  # the hard cases and spreading stories build on this module; the planner calls them
    from .hard_cases import _HardCasePlanner
    from .spreading import _SpreadPlanner

# --- Stories and copies -------------------------------------------------------------------------

#: Stories start uniformly over this window from EPOCH.
EPOCH = datetime(2026, 3, 1, tzinfo=timezone.utc)
_SECOND = timedelta(seconds=1)
#: Share of pages that are galleries or videos: chrome and captions, no article.
NO_CONTENT_SHARE = 0.01
#: Captions per gallery page (inclusive) and words per caption (inclusive).
GALLERY_CAPTIONS = (5, 12)
CAPTION_WORDS = (1, 3)
STORY_WINDOW_HOURS = 48
#: Share of stories that are wire stories, and outlets (same language) that copy one (inclusive).
WIRE_SHARE = 0.55
WIRE_COPIES = (2, 6)
#: Article length in tokens: short or long with equal chance, each spread +-25%.
SHORT_TOKENS = 150
LONG_TOKENS = 800
LONG_SHARE = 0.5
LENGTH_SPREAD = 0.25
#: Share of stories that belong to an event; stories per event, names and title words it shares.
EVENT_STORY_SHARE = 0.25
EVENT_STORIES = (2, 3)
EVENT_ENTITIES = (3, 5)
EVENT_TITLE_WORDS = (2, 3)
#: An event's stories start within this many hours of the event.
EVENT_SPREAD_HOURS = 6
#: Own entity names of a story outside events (inclusive).
STORY_ENTITIES = (2, 4)
#: A copy keeps this fraction of the wire sentences (drawn per copy, uniform).
KEEP_FRACTION = (0.70, 1.0)
#: Chance that a copy drops one middle sentence, if it has more than DROP_MIN_SENTENCES - 1.
DROP_MIDDLE_CHANCE = 0.6
DROP_MIN_SENTENCES = 7
#: Chance that a copy changes words at all, and how many (inclusive) when it does.
WORD_EDIT_CHANCE = 0.7
WORD_EDITS = (1, 4)
#: Chance that a copy opens with one extra local sentence.
LOCAL_LEAD_CHANCE = 0.2
#: Copies appear up to this many hours after the first one.
COPY_DELAY_HOURS = 12


# --- The generator ------------------------------------------------------------------------------


class _World:
    """All state of one generation run; every random draw goes through ``self.rng``."""

    min_outlets = MIN_OUTLETS

    def __init__(self, pages: int, seed: int, languages: Sequence[str], shapes: Shapes = NO_SHAPES) -> None:
        self.rng = random.Random(seed)
        self.shapes = shapes
        forbidden = _forbidden_words()
        self.forbidden = forbidden
        self.codes = list(languages)
        self.lang_cum = list(accumulate(_language_weights(languages)))
        self.langs = {code: _language(code) for code in languages}
        brand = _SPELLINGS["en"]
        self.brands = [_capitalize(_fresh_word(self.rng, brand, forbidden, 4)) for _ in range(BRANDS)]
        self.domains: dict[str, None] = {}
        self.outlets: list[_Outlet] = []
        self.by_lang: dict[str, list[_Outlet]] = {code: [] for code in languages}
        for code, count in _outlet_counts(
            max(self.min_outlets, pages // PAGES_PER_OUTLET), self.codes
        ).items():
            for _ in range(count):
                outlet = self._new_outlet(code)
                self.outlets.append(outlet)
                self.by_lang[code].append(outlet)
        self._form_networks()
        for outlet in self.outlets:
            self._fill_archive(outlet)
        self.event_chance = _event_start_chance()

    # Text ----------------------------------------------------------------------------------------

    def name(self, lang: str) -> str:
        """An entity name: one or two capitalised pseudo-words."""
        words = 2 if self.rng.random() < TWO_WORD_NAME_CHANCE else 1
        spelling = self.langs[lang].spelling
        return " ".join(_capitalize(_fresh_word(self.rng, spelling, self.forbidden, 4)) for _ in range(words))

    def sentence(
        self,
        lang: str,
        entities: Sequence[str],
        tokens: int | None = None,
        lede: bool = False,
    ) -> str:
        """One sentence: capitalised, a comma now and then, a full stop; names fill entity slots."""
        rng = self.rng
        count = tokens if tokens is not None else rng.randint(*SENTENCE_TOKENS)
        words = self.langs[lang].prose.draw(rng, count)
        for i, word in enumerate(words):
            if word == _ENTITY:
                words[i] = entities[_early_index(rng, len(entities))]
        if lede:
            words[rng.randrange(1, count)] = entities[0]
        if rng.random() < COMMA_CHANCE and count > 5:
            spot = rng.randrange(2, count - 2)
            words[spot] += ","
        return _capitalize(" ".join(words)) + "."

    def headline(self, lang: str, entities: Sequence[str]) -> list[str]:
        """Headline tokens: fewer stop words than prose, at most MAX_TITLE_NAMES names."""
        rng, language = self.rng, self.langs[lang]
        words = language.headline.draw(rng, rng.randint(*TITLE_TOKENS))
        names = 0
        for i, word in enumerate(words):
            if word == _ENTITY:
                names += 1
                words[i] = (
                    entities[rng.randrange(len(entities))]
                    if names <= MAX_TITLE_NAMES
                    else language.content_only.draw(rng, 1)[0]
                )
        return words

    def sentences_of(self, lang: str, entities: Sequence[str], words: int, lede: bool = False) -> list[str]:
        """Sentences of SENTENCE_TOKENS words each that add up to exactly ``words`` words (>= 8).

        For texts whose length is part of what they test: short stories, and quoting pages whose
        quoted passage must be a given share of their words.
        """
        low, high = SENTENCE_TOKENS
        sentences: list[str] = []
        left = words
        while left > 0:
            size = left if left < 2 * low else self.rng.randint(low, min(high, left - low))
            sentences.append(self.sentence_of(lang, entities, size, lede=lede and not sentences))
            left -= size
        return sentences

    def sentence_of(self, lang: str, entities: Sequence[str], words: int, lede: bool = False) -> str:
        """A sentence of exactly ``words`` words (the product's count, >= 2 for a lede).

        A two-word name fills one token slot, so a draw can come out longer: draw again, shorter.
        """
        tokens = words
        while True:
            text = self.sentence(lang, entities, tokens, lede=lede)
            excess = _word_count(text) - words
            if excess == 0:
                return text
            tokens = max(2, tokens - excess)

    def prose_paragraph(self, lang: str, entities: Sequence[str]) -> str:
        """30-70 tokens of sentences that add up exactly: site prose, fixed per outlet."""
        left = self.rng.randint(*SITE_PROSE_TOKENS)
        sentences = []
        while left >= 2 * SENTENCE_TOKENS[0]:
            size = self.rng.randint(SENTENCE_TOKENS[0], min(SENTENCE_TOKENS[1], left - SENTENCE_TOKENS[0]))
            sentences.append(self.sentence(lang, entities, size))
            left -= size
        sentences.append(self.sentence(lang, entities, left))
        return " ".join(sentences)

    # Outlets -------------------------------------------------------------------------------------

    def _domain(self, stem: str, lang: str) -> str:
        ui = _UI[lang]
        while True:
            domain = _ascii(stem) + self.rng.choice(_DOMAIN_SUFFIXES) + self.rng.choice(ui.tlds)
            if domain not in self.domains:
                self.domains[domain] = None
                return domain
            stem += self.rng.choice("aeiou")

    def _new_outlet(self, lang: str) -> _Outlet:
        rng, ui = self.rng, _UI[lang]
        stem = _capitalize(_fresh_word(rng, self.langs[lang].spelling, self.forbidden, 4))
        name = rng.choice(ui.outlet_names).format(stem)
        sections = tuple(rng.sample(ui.sections, rng.randint(*NAV_LINKS)))
        staff = tuple(self.name(lang) for _ in range(STAFF_PER_OUTLET))
        names = [name, *staff[:2]]
        prose = tuple(self.prose_paragraph(lang, names) for _ in range(rng.randint(*SITE_PROSE_PARAGRAPHS)))
        return _Outlet(
            domain=self._domain(stem, lang),
            lang=lang,
            name=name,
            sections=sections,
            prose=prose,
            staff=staff,
            nav_tag=rng.choice(("nav", "menu")),
            sidebar_tag=rng.choice(("aside", "sidebar")),
            sidebar_latest=rng.random() < 0.5,
            article_tag=rng.choice(("article", "story-body")),
            prose_place=rng.choice(("newsletter", "site-footer", "footer")),
            ad_class=rng.choice(("ad-slot", "promo", "adsbygoogle")),
            link_chance=rng.uniform(*INLINE_LINK_CHANCE),
            text_has_title=rng.random() < 0.5,
            body_script=_body_script(rng),
            next_number=rng.randrange(100_000, 900_000),
        )

    def _form_networks(self) -> None:
        """Group outlets of one language into networks that share one prose paragraph verbatim."""
        rng = self.rng
        networks = round(rng.randint(*NETWORKS) * len(self.outlets) / MIN_OUTLETS)
        free = {code: rng.sample(outlets, len(outlets)) for code, outlets in self.by_lang.items()}
        for _ in range(networks):
            open_codes = [code for code in self.codes if len(free[code]) >= NETWORK_SIZE[0]]
            if not open_codes:
                return
            code = rng.choices(open_codes, weights=[len(free[c]) for c in open_codes])[0]
            size = min(rng.randint(*NETWORK_SIZE), len(free[code]))
            members, free[code] = free[code][:size], free[code][size:]
            shared = self.prose_paragraph(code, [members[0].name])
            for outlet in members:
                prose = list(outlet.prose)
                prose[rng.randrange(len(prose))] = shared
                outlet.prose = tuple(prose)

    def _fill_archive(self, outlet: _Outlet) -> None:
        for _ in range(ARCHIVE_HEADLINES):
            title = _render_title(self.headline(outlet.lang, [self.name(outlet.lang)]))
            outlet.archive.append((title, self.url(outlet, title)))

    def url(self, outlet: _Outlet, title: str) -> str:
        section = self.rng.choice(outlet.sections)[0]
        slug = "-".join(filter(None, (_ascii(word) for word in title.split()[:7])))
        outlet.next_number += self.rng.randint(1, 60)
        return f"https://{outlet.domain}/{section}/{slug}-{outlet.next_number}"

    # Stories -------------------------------------------------------------------------------------

    def pick_language(self) -> str:
        return self.rng.choices(self.codes, cum_weights=self.lang_cum)[0]

    def story(
        self, label: str, lang: str, start: int, event: _Event | None, words: int | None = None
    ) -> _Story:
        """A story's names, headline and article (of exactly ``words`` words if given)."""
        rng = self.rng
        if event is None:
            entities = tuple(self.name(lang) for _ in range(rng.randint(*STORY_ENTITIES)))
        else:
            entities = event.entities + tuple(self.name(lang) for _ in range(rng.randint(0, 1)))
        title = self.headline(lang, entities)
        if event is not None:
            shared = (*event.title_words, entities[0])
            for where, word in zip(rng.sample(range(len(title)), len(shared)), shared, strict=True):
                title[where] = word
        return _Story(
            label=label,
            lang=lang,
            wire=rng.random() < WIRE_SHARE,
            start=start,
            title=tuple(title),
            sentences=self._article(lang, entities, words),
            entities=entities,
            event=event.label if event else None,
        )

    def _article(
        self, lang: str, entities: Sequence[str], words: int | None = None
    ) -> tuple[tuple[int, str], ...]:
        """Sentences tagged with their paragraph number, about SHORT_TOKENS or LONG_TOKENS long, or
        exactly ``words`` words (a short story)."""
        if words is not None:
            return self.in_paragraphs(self.sentences_of(lang, entities, words, lede=True))
        rng = self.rng
        base = LONG_TOKENS if rng.random() < LONG_SHARE else SHORT_TOKENS
        target = round(base * rng.uniform(1 - LENGTH_SPREAD, 1 + LENGTH_SPREAD))
        sentences: list[tuple[int, str]] = []
        paragraph, in_paragraph, size, tokens = 0, 0, rng.randint(*SENTENCES_PER_PARAGRAPH), 0
        while tokens < target:
            count = rng.randint(*SENTENCE_TOKENS)
            sentences.append((paragraph, self.sentence(lang, entities, count, lede=not sentences)))
            tokens += count
            in_paragraph += 1
            if in_paragraph == size:
                paragraph, in_paragraph, size = paragraph + 1, 0, rng.randint(*SENTENCES_PER_PARAGRAPH)
        return tuple(sentences)

    def in_paragraphs(self, sentences: Sequence[str]) -> tuple[tuple[int, str], ...]:
        """Sentences tagged with paragraph numbers, SENTENCES_PER_PARAGRAPH to a paragraph."""
        tagged: list[tuple[int, str]] = []
        paragraph, in_paragraph, size = 0, 0, self.rng.randint(*SENTENCES_PER_PARAGRAPH)
        for text in sentences:
            tagged.append((paragraph, text))
            in_paragraph += 1
            if in_paragraph == size:
                paragraph, in_paragraph, size = paragraph + 1, 0, self.rng.randint(*SENTENCES_PER_PARAGRAPH)
        return tuple(tagged)

    def event(self, label: str) -> _Event:
        lang = self.pick_language()
        content = self.langs[lang].content_only
        return _Event(
            label=label,
            lang=lang,
            start=self.rng.randrange(STORY_WINDOW_HOURS * 3600),
            entities=tuple(self.name(lang) for _ in range(self.rng.randint(*EVENT_ENTITIES))),
            title_words=tuple(content.draw(self.rng, self.rng.randint(*EVENT_TITLE_WORDS))),
        )

    # Copies --------------------------------------------------------------------------------------

    def copy_text(self, story: _Story) -> tuple[str, ...]:
        """One outlet's edit of a wire story: trimmed, a sentence dropped, words changed, a lead added."""
        rng = self.rng
        sentences = list(story.sentences)
        keep_fraction = TRIMMED_KEEP_FRACTION if self.shapes.trimmed else KEEP_FRACTION
        keep = max(1, math.ceil(len(sentences) * rng.uniform(*keep_fraction)))
        del sentences[keep:]
        if len(sentences) >= DROP_MIN_SENTENCES and rng.random() < DROP_MIDDLE_CHANCE:
            del sentences[rng.randrange(len(sentences) // 4, 3 * len(sentences) // 4)]
        if rng.random() < WORD_EDIT_CHANCE:
            for _ in range(rng.randint(*WORD_EDITS)):
                where = rng.randrange(len(sentences))
                number, text = sentences[where]
                sentences[where] = (number, self._replace_word(story.lang, text))
        if rng.random() < LOCAL_LEAD_CHANCE:
            sentences.insert(0, (-1, self.sentence(story.lang, story.entities)))
        return _paragraphs(sentences)

    def _replace_word(self, lang: str, sentence: str) -> str:
        """Swap one word for another of the same kind (stop for stop), keeping case and punctuation."""
        rng, language = self.rng, self.langs[lang]
        words = sentence.split(" ")
        where = rng.randrange(len(words))
        while where > 0 and words[where][:1].isupper():  # a name: leave it, edit a word before it
            where -= 1
        core = words[where].rstrip(",.")
        mixture = language.stop_only if core.lower() in language.stop_set else language.content_only
        new = mixture.draw(rng, 1)[0]
        words[where] = (_capitalize(new) if where == 0 else new) + words[where][len(core) :]
        return " ".join(words)

    def retitle(self, lang: str, title: Sequence[str]) -> tuple[str, ...]:
        """An outlet's own headline for a wire story: reshuffled, a word or two changed."""
        rng, words = self.rng, list(title)
        if rng.random() < 0.5:
            pivot = rng.randrange(2, len(words) - 1)
            words = words[pivot:] + words[:pivot]
        for _ in range(rng.randint(0, 2)):
            where = rng.randrange(len(words))
            if not words[where][:1].isupper():
                words[where] = self.langs[lang].content_only.draw(rng, 1)[0]
        if len(words) > TITLE_TOKENS[0] and rng.random() < 0.2:
            del words[rng.randrange(len(words))]
        return tuple(words)

    def drafts_of(self, story: _Story, seq: int) -> list[_Draft]:
        """The pages carrying one story, earliest first (so a cut keeps the first copies)."""
        rng, outlets = self.rng, self.by_lang[story.lang]
        if not story.wire:
            paragraphs = _paragraphs(list(story.sentences))
            return [self._draft(story, rng.choice(outlets), story.start, seq, story.title, paragraphs)]
        count = min(rng.randint(*WIRE_COPIES), len(outlets))
        delays = sorted([0] + [rng.randrange(COPY_DELAY_HOURS * 3600) for _ in range(count - 1)])
        drafts = []
        for number, (outlet, delay) in enumerate(zip(rng.sample(outlets, count), delays, strict=True)):
            title = self.retitle(story.lang, story.title)
            drafts.append(
                self._draft(story, outlet, story.start + delay, seq + number, title, self.copy_text(story))
            )
        return drafts

    @staticmethod
    def _draft(
        story: _Story, outlet: _Outlet, when: int, seq: int, title: Sequence[str], paragraphs: tuple[str, ...]
    ) -> _Draft:
        return _Draft(
            when=when,
            seq=seq,
            outlet=outlet,
            label=story.label,
            kind="wire" if story.wire else "local",
            event=story.event,
            title=tuple(title),
            paragraphs=paragraphs,
            entities=story.entities,
        )

    def no_content_draft(self, label: str, seq: int) -> _Draft:
        """A photo gallery or video page: captions only; it is its own cluster."""
        rng = self.rng
        outlet = rng.choice(self.outlets)
        ui = _UI[outlet.lang]
        heading = self.headline(outlet.lang, [self.name(outlet.lang)])[: rng.randint(3, 6)]
        kind = ui.photos if rng.random() < 0.6 else ui.video
        captions = tuple(self._caption(outlet.lang) for _ in range(rng.randint(*GALLERY_CAPTIONS)))
        return self._without_article(label, seq, outlet, "no-content", (kind + ":", *heading), captions)

    def notice_draft(self, label: str, seq: int) -> _Draft:
        """A site's notice at a story's address (:mod:`.notices`): its own page, like a gallery."""
        rng = self.rng
        outlet = rng.choice(self.outlets)
        kind = rng.choice(NOTICE_KINDS)
        title, lines = notice_text(kind, outlet.lang, f"{rng.getrandbits(64):016x}")
        return self._without_article(label, seq, outlet, "notice", tuple(title.split()), lines)

    def _without_article(
        self, label: str, seq: int, outlet: _Outlet, kind: str, title: tuple[str, ...], lines: tuple[str, ...]
    ) -> _Draft:
        """A page that carries no story, at any moment of the window: its own cluster."""
        return _Draft(
            when=self.rng.randrange(STORY_WINDOW_HOURS * 3600),
            seq=seq,
            outlet=outlet,
            label=label,
            kind=kind,
            event=None,
            title=title,
            paragraphs=lines,
            entities=(),
        )

    def _caption(self, lang: str) -> str:
        words = self.langs[lang].content_only.draw(self.rng, self.rng.randint(*CAPTION_WORDS))
        return _capitalize(" ".join(words))


def _paragraphs(sentences: Sequence[tuple[int, str]]) -> tuple[str, ...]:
    """Join tagged sentences back into paragraph strings, keeping the original paragraph breaks."""
    paragraphs: list[list[str]] = []
    last = None
    for number, text in sentences:
        if number != last:
            paragraphs.append([])
            last = number
        paragraphs[-1].append(text)
    return tuple(" ".join(group) for group in paragraphs)


def _early_index(rng: random.Random, count: int) -> int:
    """0 half the time, 1 a quarter... capped: a story's first names are mentioned most.

    Coin flips rather than ``expovariate``, whose ``log`` may differ in the last bit between C libraries.
    """
    index = 0
    while index < count - 1 and rng.random() < 0.5:
        index += 1
    return index


def _render_title(words: Sequence[str]) -> str:
    return _capitalize(" ".join(words))


def _body_script(rng: random.Random) -> str:
    tag = f"G-{rng.randrange(16**8):08X}"
    return (
        f"window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments)}}"
        f"gtag('js',new Date());gtag('config','{tag}');"
    )


# --- Planning: stories until the page count is reached ------------------------------------------


def _event_start_chance() -> float:
    """Chance that a new draw opens an event, so that EVENT_STORY_SHARE of stories are in one."""
    mean = sum(EVENT_STORIES) / 2
    return EVENT_STORY_SHARE / (mean - EVENT_STORY_SHARE * (mean - 1))


def _plan(
    world: _World, pages: int, hard: _HardCasePlanner | None = None, spread: _SpreadPlanner | None = None
) -> list[_Draft]:
    """Draw stories (alone or as an event's siblings) until exactly ``pages`` drafts exist.

    ``hard`` decides which stories are short, and adds its teasers, quoting pages and digests of the stories
    drawn (in the pages it asks to keep for them) before the no-content pages; ``spread`` adds the
    copies of its spreading stories after them.
    """
    rng = world.rng
    blanks = round(pages * (NOTICE_SHARE if world.shapes.notices else NO_CONTENT_SHARE))
    counts = (0, 0, 0) if hard is None else hard.page_counts(pages, pages - blanks)
    spreading = 0 if spread is None else spread.page_count(pages - blanks - sum(counts))
    wanted = pages - blanks - sum(counts) - spreading
    drafts: list[_Draft] = []
    told: list[tuple[_Story, list[_Draft]]] = []
    stories = events = 0
    event_chance = world.event_chance
    while len(drafts) < wanted:
        group: list[tuple[str, int, _Event | None]] = []
        if rng.random() < event_chance:
            event = world.event(f"e{events:05d}")
            events += 1
            for _ in range(rng.randint(*EVENT_STORIES)):
                group.append((event.lang, event.start + rng.randrange(EVENT_SPREAD_HOURS * 3600), event))
        else:
            group.append((world.pick_language(), rng.randrange(STORY_WINDOW_HOURS * 3600), None))
        for lang, start, of_event in group:
            if len(drafts) == wanted:  # an event cut short: its later siblings never run
                break
            words = None if hard is None else hard.story_words()
            story = world.story(f"s{stories:05d}", lang, start, of_event, words)
            stories += 1
            carried = world.drafts_of(story, len(drafts))[: wanted - len(drafts)]
            told.append((story, carried))
            drafts += carried
    if hard is not None:
        drafts += hard.drafts(told, counts, len(drafts), stories)
    if spread is not None:
        drafts += spread.drafts(len(drafts), spreading)
    blank = world.notice_draft if world.shapes.notices else world.no_content_draft
    for number in range(blanks):
        drafts.append(blank(f"n{number:05d}", len(drafts)))
    drafts.sort(key=lambda draft: (draft.when, draft.seq))
    return drafts
