"""Copies with a lead of their own (stream_lsh.core.own_lead): a copy of a short story with an
outlet's own sentences on top joins the story by where the story begins in it, while a page that
quotes the story's start after a paragraph of its own stays apart."""

import random
import re

import numpy as np
from conftest import prose
from test_opening import decided_alike_on_disk, page

from stream_lsh.core.decision import DUPLICATE, UNIQUE, Match, decide
from stream_lsh.core.dedup import Deduplicator, export_state, import_state
from stream_lsh.core.own_lead import (
    LEAD,
    MIN_CONTAINMENT,
    MIN_SHARE_OF_CANDIDATE,
    MIN_SHARE_OF_PAGE,
    after_lead,
    opens_after_lead,
)
from stream_lsh.core.verification import Verification

RULE = Verification(0.3, 0.7)


def test_the_openings_after_a_lead_are_the_next_sentences_keys():
    assert after_lead(5, (5, 6, 7, 8)) == (6, 7)  # LEAD_SENTENCES of them
    assert after_lead(5, (9, 5, 6)) == (9, 6)  # a key that is not the opening, wherever it stands
    assert after_lead(5, (5,)) == () and after_lead(5, ()) == ()


def test_two_pages_open_alike_once_a_lead_is_set_aside():
    assert opens_after_lead(1, (2,), 2, ())  # the page's second sentence opens the other
    assert opens_after_lead(2, (), 1, (2,))  # the other's second sentence opens the page
    assert opens_after_lead(1, (3,), 2, (3,))  # both have a lead of their own
    assert not opens_after_lead(1, (3,), 1, (3,))  # they open alike: the lead already counts
    assert not opens_after_lead(1, (2,), 3, (4,))
    assert not opens_after_lead(0, (2,), 2, ())  # too short to have an opening


def test_the_rule_takes_a_lower_containment_only_where_the_page_is_mostly_the_story():
    kwargs = {"signed": True, "exact": None, "rule": RULE, "founds": "p"}
    copy = Match(
        "story", 0.27, "S", MIN_CONTAINMENT, MIN_SHARE_OF_PAGE, MIN_SHARE_OF_CANDIDATE, after_lead=True
    )
    assert decide("p", candidates=[copy], **kwargs).match == LEAD
    quote = copy._replace(of_candidate=MIN_SHARE_OF_CANDIDATE - 0.05)  # a passage of the story
    assert decide("p", candidates=[quote], **kwargs).status == UNIQUE
    commentary = copy._replace(of_page=MIN_SHARE_OF_PAGE - 0.1)  # the story and much else
    assert decide("p", candidates=[commentary], **kwargs).status == UNIQUE
    unmeasured = copy._replace(of_page=None, of_candidate=None)  # containment alone decides
    assert decide("p", candidates=[unmeasured], **kwargs).match == LEAD
    elsewhere = copy._replace(after_lead=False)  # no opening in common: the usual thresholds
    assert decide("p", candidates=[elsewhere], **kwargs).status == UNIQUE
    assert decide("p", candidates=[copy], roundup=True, **kwargs).status == UNIQUE  # a roundup: no


def edited(text: str, edits: int, seed: int) -> str:
    """The text with words replaced (never among the first five, which the opening holds)."""
    rng, words = random.Random(seed), text.split()
    for _ in range(edits):
        at = rng.randrange(5, len(words))
        words[at] = "zorbo." if words[at].endswith(".") else "zorbo"
    return " ".join(words)


def first_sentences(text: str, count: int) -> str:
    return " ".join(sentence.strip() for sentence in re.findall(r"[^.]+\.", text)[:count])


def brief_and_pages():
    """An 80-word brief, edited; another outlet's copy, edited otherwise, under two sentences of its
    own; a page that quotes the brief's first 30 words between paragraphs of its own."""
    brief = prose(1, 80)
    lead = first_sentences(prose(10, 40), 2)
    quoted = " ".join(brief.split()[:30]) + "."
    return [
        page("brief", edited(brief, 8, 1), "wire.example"),
        page("copy", lead + " " + edited(brief, 8, 2), "herald.example"),
        page("quote", "\n".join([prose(20, 40), quoted, prose(21, 70)]), "ledger.example"),
    ]


def test_a_copy_with_a_lead_of_its_own_joins_the_story_and_a_quoting_page_does_not():
    brief, copy, quote = Deduplicator().process_batch(brief_and_pages())
    assert brief.status == UNIQUE
    assert (copy.status, copy.duplicate_of, copy.match) == (DUPLICATE, "brief", LEAD), copy
    assert copy.similarity < RULE.jaccard and copy.containment < RULE.containment  # missed before
    assert quote.status == UNIQUE, quote


def test_a_window_on_disk_decides_alike(tmp_path):
    assert decided_alike_on_disk(brief_and_pages(), tmp_path / "window")


def test_the_openings_after_the_lead_are_saved_with_the_window():
    engine = Deduplicator()
    engine.process_batch(brief_and_pages()[:2])
    header, arrays = export_state(engine)
    restored = Deduplicator()
    import_state(restored, header, arrays)
    assert [e.after_lead for e in restored.index] == [e.after_lead for e in engine.index]
    assert any(e.after_lead for e in restored.index)
    del arrays["after_leads"]  # a state saved before they were kept
    older = Deduplicator()
    import_state(older, header, {k: np.asarray(v) for k, v in arrays.items()})
    assert all(e.after_lead == () for e in older.index)
