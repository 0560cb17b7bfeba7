"""The generator's world written in real prose (``prose="real"``): the same outlets, copies, edits,
hard cases and shapes, with every story a real English news article (:mod:`.real_prose`).

Only the text changes. A story is the next unused article, its sentences in paragraphs of one to
four; its headline is the start of its first sentence, as headline lists of scraped sites often
show it. A copy's local lead sentence and a quoting page's own story are real sentences too, each used
once, from a reserve of articles that are never stories, so no text is shared by accident. Site
prose (newsletter pitches, cookie notices, "about us") is drawn from English sentences of that
register, each naming its outlet. There are no events: the articles are what they are. Entity
names, outlet names and bylines stay pseudo-words; they are chrome. One language means fewer
outlets: :data:`REAL_OUTLETS`.

The articles are few (339 after reruns are dropped), so a real corpus holds about 600 pages; a
larger one is refused with the number that fits.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ..errors import CorpusError
from .language import _word_count
from .outlets import _Event, _Story
from .real_prose import articles
from .shapes import NO_SHAPES, Shapes
from .world import WIRE_SHARE, _World

__all__ = ["REAL_OUTLETS", "RESERVE_SHARE"]

#: Share of the articles kept out of stories, for site prose, local leads and quoting pages' text.
RESERVE_SHARE = 0.25
#: Outlets of a real corpus (at least): one language, about 60 pages each at the usual size.
REAL_OUTLETS = 12
#: A headline is the first this-many words (inclusive) of a story's first sentence.
HEADLINE_WORDS = (6, 11)
_SENTENCE = re.compile(r"(?<=[.!?])[\"']?\s+(?=[\"']?[A-Z0-9])")


#: Sentences of site prose, in the register sites use around their stories.
SITE_PROSE = (
    "Sign up for the {name} newsletter and get the day's most important stories in your inbox every morning.",
    "We use cookies to give you the best possible experience on our website and to show you relevant ads.",
    "By continuing to use this site you agree to our use of cookies as set out in our privacy policy.",
    "{name} has been reporting on the issues that matter to our community since {year}.",
    "Our journalism is funded by readers like you, so please consider becoming a subscriber today.",
    "Got a story you think we should cover? Contact the newsroom and a reporter will get back to you.",
    "All content on this site is protected by copyright and may not be reproduced without permission.",
    "Comments are moderated and will appear once they have been approved by a member of our team.",
    "Follow {name} on social media for breaking news, photos and the latest updates from our reporters.",
    "Subscribers can read every story on our website and in the app, and get access to the digital edition.",
    "{name} is committed to accuracy; if you spot an error in one of our articles, please let us know.",
    "Advertising helps us keep our journalism free for everyone to read, so please turn off your ad blocker.",
    "Download our free app to get news alerts on your phone as soon as the story breaks.",
    "The views expressed in opinion pieces are those of the authors and not necessarily those of {name}.",
)


def _sentences(article: str) -> list[str]:
    pieces: list[str] = []
    for piece in _SENTENCE.split(article):
        if pieces and _word_count(piece) < 4:
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


class _RealProseWorld(_World):
    """:class:`._World` with real articles as stories and real sentences as its other text."""

    min_outlets = REAL_OUTLETS

    def __init__(self, pages: int, seed: int, languages: Sequence[str], shapes: Shapes = NO_SHAPES) -> None:
        if list(languages) != ["en"]:
            raise ValueError(f"real prose is English: languages must be ['en'], got {list(languages)}")
        pool = list(articles())
        random.Random(f"real-prose:{seed}").shuffle(pool)  # its own generator: the world's stays as it is
        reserve = round(len(pool) * RESERVE_SHARE)
        self._reserve = [sentence for text in pool[:reserve] for sentence in _sentences(text)]
        self._next_sentence = 0
        self._stories = [_sentences(text) for text in pool[reserve:]]
        self._next_story = 0
        super().__init__(pages, seed, languages, shapes)
        self.event_chance = 0.0

    # Stories ------------------------------------------------------------------------------------

    def story(
        self, label: str, lang: str, start: int, event: _Event | None, words: int | None = None
    ) -> _Story:
        """The next unused article as a story (cut to ``words`` words if given: a short story)."""
        if self._next_story == len(self._stories):
            raise CorpusError(
                f"the real prose holds {len(self._stories)} stories; ask for fewer pages "
                f"(about {round(len(self._stories) * 2.4)} fit)"
            )
        sentences = self._stories[self._next_story]
        self._next_story += 1
        if words is not None:
            sentences = _cut(sentences, words)
        first = sentences[0].split()
        title = tuple(first[: self.rng.randint(*HEADLINE_WORDS)])
        entities = tuple(self.name(lang) for _ in range(2))
        return _Story(
            label=label,
            lang=lang,
            wire=self.rng.random() < WIRE_SHARE,
            start=start,
            title=tuple(word.rstrip(",;:") for word in title),
            sentences=self.in_paragraphs(sentences),
            entities=entities,
            event=None,
        )

    # Other text ---------------------------------------------------------------------------------

    def sentence(
        self, lang: str, entities: Sequence[str], tokens: int | None = None, lede: bool = False
    ) -> str:
        """The next unused real sentence of the reserve (cut to ``tokens`` words if given)."""
        text = self._take(1)[0]
        return text if tokens is None else _cut([text], tokens)[0]

    def sentences_of(self, lang: str, entities: Sequence[str], words: int, lede: bool = False) -> list[str]:
        """The next unused real sentences of the reserve that add up to ``words`` words, the last
        one cut (a word or two fewer where a cut splits a token)."""
        run: list[str] = []
        while sum(map(_word_count, run)) < words:
            run += self._take(1)
        return _cut(run, words)

    def _take(self, count: int) -> list[str]:
        """The reserve's next sentences: no text is used twice, so no two pages share it by chance."""
        if self._next_sentence + count > len(self._reserve):
            raise CorpusError(
                f"the real prose's reserve of {len(self._reserve)} sentences (for local leads and "
                "quoting pages) is used up; ask for fewer pages or fewer quoting pages"
            )
        self._next_sentence += count
        return self._reserve[self._next_sentence - count : self._next_sentence]

    def prose_paragraph(self, lang: str, entities: Sequence[str]) -> str:
        """Two or three sentences of what sites print around their stories (a newsletter pitch, a
        cookie notice, an "about us" blurb), naming the outlet: site prose, fixed per outlet."""
        name = entities[0] if entities else "this site"
        sentences = self.rng.sample(SITE_PROSE, self.rng.randint(2, 3))
        return " ".join(
            sentence.format(name=name, year=self.rng.randint(1850, 2015)) for sentence in sentences
        )


def _cut(sentences: Sequence[str], words: int) -> list[str]:
    """The first sentences holding ``words`` words (at most); the last one cut, with a full stop."""
    kept: list[str] = []
    left = words
    for text in sentences:
        count = _word_count(text)
        if count <= left:
            kept.append(text)
            left -= count
        else:
            pieces = text.split()
            while _word_count(" ".join(pieces)) > left:
                pieces.pop()
            if pieces:
                kept.append(" ".join(pieces).rstrip(",;:") + ".")
            left = 0
        if left == 0:
            break
    return kept
