"""Stories that spread, on request: one wire text copied by many outlets within a few hours.

A newsroom's story-spread alerts (:mod:`stream_lsh.core.spread`) fire when a cluster reaches 3, 10
and 30 pages from as many distinct sources within 6 hours of event time (the default levels).
Ordinary wire stories reach the first level now and then (2-6 copies over 12 hours); a spreading
story is made to reach them all at known times: by turns it is copied by SPREAD_OUTLETS[0] outlets
(enough for the 30-source level), SPREAD_OUTLETS[1] (10) and SPREAD_OUTLETS[2] (3), each outlet
once, every copy within SPREAD_HOURS of the first. The truth marks its pages (``spreading``) and
gives each page's outlet and publication time, from which the alerts due follow.

Every copy is in the language with the most outlets, and the world gets more outlets of it when
it has fewer than the largest spreading story needs. The extra outlets are made before any story
is drawn, so they publish ordinary stories too and their site prose is learnt (a site's first page
still carries its prose); spreading stories start in the second half of the story window for the
same reason. Which story spreads, how far, when and where comes from a generator of its own,
seeded from the corpus seed; the text and the extra outlets come from the world's, so with no
spreading story the corpus is exactly that of a world without this module.
"""

from __future__ import annotations

import dataclasses
import random

from .outlets import _Draft
from .world import STORY_WINDOW_HOURS, _World

#: Outlets (inclusive) carrying a spreading story, by turns: the first, fourth... story reach 30
#: sources, the second, fifth... 10, the third, sixth... 3 (the default alert levels).
SPREAD_OUTLETS = ((30, 36), (10, 20), (3, 8))
#: Every copy of a spreading story comes within this many hours of its first (under the default
#: alert span of 6 hours, so all its copies are in one window).
SPREAD_HOURS = 4
#: A spreading story starts in these hours of the story window (second half: outlets' prose learnt).
SPREAD_START_HOURS = (STORY_WINDOW_HOURS // 2, STORY_WINDOW_HOURS - SPREAD_HOURS)
#: The most spreading stories that may be asked for.
MAX_SPREADING = 1000


def check_spreading(stories: int) -> None:
    """Refuse a count of spreading stories that is not a whole number from 0 to MAX_SPREADING."""
    if isinstance(stories, bool) or not isinstance(stories, int) or not 0 <= stories <= MAX_SPREADING:
        raise ValueError(f"spreading must be a number of stories from 0 to {MAX_SPREADING}, got {stories!r}")


class _SpreadPlanner:
    """Plans the spreading stories of one run; its choices use ``self.rng``, never the world's."""

    def __init__(self, world: _World, seed: int, stories: int) -> None:
        check_spreading(stories)
        self.world = world
        # A string seed is hashed with SHA-512 (not hash()): the same in every process and machine.
        self.rng = random.Random(f"spreading:{seed}")
        self.sizes = [self.rng.randint(*SPREAD_OUTLETS[n % len(SPREAD_OUTLETS)]) for n in range(stories)]
        codes = world.codes
        self.lang = max(codes, key=lambda code: (len(world.by_lang[code]), -codes.index(code)))

    def add_outlets(self) -> None:
        """Outlets of the spreading language until the largest story finds enough of them."""
        world, wanted = self.world, max(self.sizes, default=0)
        while len(world.by_lang[self.lang]) < wanted:
            outlet = world._new_outlet(self.lang)
            world._fill_archive(outlet)
            world.outlets.append(outlet)
            world.by_lang[self.lang].append(outlet)

    def page_count(self, room: int) -> int:
        """Pages for the spreading stories among ``room`` pages that may carry articles: all their
        copies, but at least one page is left to an ordinary story (a corpus of a handful of pages)."""
        return min(sum(self.sizes), max(0, room - 1))

    def drafts(self, seq: int, pages: int) -> list[_Draft]:
        """The copies of the spreading stories, ``pages`` of them (the last stories are cut short
        when there is no room), with seq numbers from ``seq``."""
        world, rng = self.world, self.rng
        drafts: list[_Draft] = []
        outlets = world.by_lang[self.lang]
        for number, size in enumerate(self.sizes):
            count = min(size, pages - len(drafts))
            if count <= 0:
                break
            start = rng.randrange(SPREAD_START_HOURS[0] * 3600, SPREAD_START_HOURS[1] * 3600)
            story = dataclasses.replace(world.story(f"w{number:05d}", self.lang, start, None), wire=True)
            delays = sorted([0] + [rng.randrange(SPREAD_HOURS * 3600) for _ in range(count - 1)])
            for outlet, delay in zip(rng.sample(outlets, count), delays, strict=True):
                title, text = world.retitle(story.lang, story.title), world.copy_text(story)
                draft = world._draft(story, outlet, start + delay, seq + len(drafts), title, text)
                drafts.append(dataclasses.replace(draft, spreading=True))
        return drafts
