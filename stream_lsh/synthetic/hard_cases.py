"""Hard cases on request: short stories, teasers (duplicates) and quoting pages (not duplicates).

Real feeds carry pages that pull a Jaccard threshold in opposite directions. A teaser (an RSS item,
a partner site's excerpt, an "in brief" column) holds only the first third of a story, yet it IS
that story; a page quoting a long passage of an earlier story (a statement, a court ruling, a wire
paragraph) shares much of its text, yet it is NOT that story. Short stories of 60-100 words have
few shingles, so a few edits move their similarity a lot.

Every choice here comes from a generator of its own, seeded from the corpus seed, so that with
every share at 0 the main generator's draws, and so the corpus, are exactly those of the plain
world. Text the hard cases need (names, titles, own sentences) is written by the world as all
text is, from the main generator: that changes the rest of the corpus only when a case is asked.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .world import _World

# --- Shares and shapes --------------------------------------------------------------------------

#: The largest share that ``teasers``, ``quotes`` or ``short_stories`` may ask for.
MAX_HARD_CASE_SHARE = 0.5
#: Article words (the product's tokens, inclusive) of a short story.
SHORT_STORY_WORDS = (60, 100)


@dataclass(frozen=True)
class HardCases:
    """The shares asked for: teasers and quoting pages of the pages, short stories of the stories."""

    teasers: float = 0.0
    quotes: float = 0.0
    short_stories: float = 0.0

    def check(self) -> None:
        """Refuse a share outside [0, MAX_HARD_CASE_SHARE] (NaN included), naming the argument."""
        for name, share in (
            ("teasers", self.teasers),
            ("quotes", self.quotes),
            ("short_stories", self.short_stories),
        ):
            if not 0.0 <= share <= MAX_HARD_CASE_SHARE:
                raise ValueError(f"{name} must be a share in [0, {MAX_HARD_CASE_SHARE}], got {share!r}")


# --- The planner's helper -----------------------------------------------------------------------


class _HardCasePlanner:
    """Draws the hard cases for one run; its choices use ``self.rng``, never the world's."""

    def __init__(self, world: _World, seed: int, shares: HardCases) -> None:
        self.world = world
        self.shares = shares
        # A string seed is hashed with SHA-512 (not hash()): the same in every process and machine.
        self.rng = random.Random(f"hard-cases:{seed}")

    def story_words(self) -> int | None:
        """Exact article words for a short story, or None for a story of the usual length."""
        if self.shares.short_stories and self.rng.random() < self.shares.short_stories:
            return self.rng.randint(*SHORT_STORY_WORDS)
        return None
