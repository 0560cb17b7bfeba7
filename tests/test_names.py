"""The names a page gives (stream_lsh.core.names): what parts two items of one template, which
shingles take for copies, while a story's copies, trimmed or edited, stay together."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.names import (
    MIN_MISSING,
    SKETCH_SIZE,
    NameSketch,
    gives_names,
    name_hashes,
    named_apart,
    names_in,
    sketch_of,
)
from stream_lsh.core.page import Page

NOTICE = (
    "{upper}. Passed away peacefully at {town} Hospital on {day} {date} November, aged {age} years. "
    "Beloved husband of {wife} (dec). Loving father and father-in-law of {kids}. "
    "Relatives and friends are invited to attend the funeral service for {first} to be held at "
    "St Mary's Anglican Church, {town} on Thursday 14 November at {time}, followed by interment at "
    "the {town} Lawn Cemetery. In lieu of flowers, donations to the Heart Foundation would be "
    "appreciated. {home} Funerals, phone 02 6555 {phone}."
)
FIELDS = ("first", "last", "town", "day", "date", "age", "wife", "kids", "time", "home", "phone")
PEOPLE = [
    dict(zip(FIELDS, values, strict=True))
    for values in (
        (
            "Ronald",
            "Brown",
            "Greystone",
            "Saturday",
            9,
            91,
            "Dorothy",
            "Mark and David",
            "2pm",
            "Rivers",
            3273,
        ),
        (
            "Barry",
            "Mitchell",
            "Millbrook",
            "Sunday",
            10,
            77,
            "Judith",
            "Olivia, Adam and Michael",
            "11am",
            "Greenhill",
            1796,
        ),
        (
            "Keith",
            "Walsh",
            "Banksia",
            "Friday",
            8,
            87,
            "Yvonne",
            "Hannah, Chloe and Daniel",
            "10.30am",
            "Coastal",
            5136,
        ),
    )
]
CHROME = "<header>{paper}</header><nav>Home | News | Sport | Obituaries</nav>{body}<footer>© {paper}</footer>"


def notice(person: dict[str, object]) -> str:
    return NOTICE.format(upper=f"{person['first']} {person['last']}".upper(), **person)


def test_headings_and_pointers_name_nothing():
    """Each outlet writes its own headline, byline and credit; a link names another story."""
    assert names_in("China Industrial Output Rises In First Quarter") == []
    assert names_in("(Reporting by Peter Quinn; Editing by Sarah Lindqvist)") == []
    assert names_in("Read more: Henkel to increase stake in Clorox after talks with Boston investors.") == []


def test_lines_in_headline_case_name_nothing_and_sentences_full_of_names_do():
    """A related-links box lists other stories' headlines, too long to be headings; a sentence
    sets its names among words in small letters, or ends like one."""
    related = (
        "Gilead Announces Topline Results From Phase 2 ATLAS Study in Patients With Bridging "
        "Fibrosis (F3) and Compensated Cirrhosis (F4) Due to Nonalcoholic Steatohepatitis (NASH)"
    )
    assert not gives_names(related) and names_in(related) == []
    assert names_in("Apple Chief Executive Tim Cook Visits Beijing Factory") == []
    assert names_in("Apple Chief Executive Tim Cook Visits Beijing Factory.") != []
    sentence = (  # no full stop ends it, and most of its words are names
        "Shares of Xfinity Mobile and Samsung Electronics rose in New York after Comcast and Verizon "
        "said they would share the network in Chicago and Denver"
    )
    assert names_in(sentence) != []


def test_a_teaser_with_a_related_headline_is_not_named_apart_from_its_story():
    """The twenty-seventh outside set: a paywalled teaser keeps its story's first paragraphs, and
    its page's related-links box other stories' headlines, whose words read as 15-25 names of its
    own; the teaser and its story were named apart, and parted."""
    paragraphs = [
        "Comcast said Xfinity Mobile will carry the Samsung Galaxy S20 and the Galaxy Note from Friday.",
        "Customers in Philadelphia, Boston and Denver can order online, Comcast said in a statement.",
        "The Verizon network carries the calls, and Xfinity Mobile pays Verizon for the traffic it uses.",
        "Analysts at Moody's and Fitch said the deal would help Comcast keep cable customers in Chicago.",
        "Samsung said Galaxy sales in Texas, Ohio and Florida rose after T-Mobile and AT&T cut prices.",
    ]
    related = [  # too long to be headings
        "Gilead Announces Topline Results From Phase 2 ATLAS Study in Patients With Bridging Fibrosis "
        "and Compensated Cirrhosis Due to Nonalcoholic Steatohepatitis",
        "Intuit QuickBooks Canadian Small Business Holiday Report Reveals Seasonal Surge in Online Orders "
        "Across Retail Sectors During December",
    ]
    story = sketch_of(h for hashes in name_hashes(paragraphs, 1) for h in hashes)
    teaser = sketch_of(h for hashes in name_hashes(paragraphs[:2] + related, 1) for h in hashes)
    assert not named_apart(story, teaser)


def test_names_are_capitalised_words_inside_sentences_and_numbers():
    found = names_in(
        "Police said Smith's car was found in Station St, Larkspur, at 6:15pm on Monday, 12 km away."
    )
    assert found == ["smith", "station", "st", "larkspur", "12"]  # not "Police" (opens), times, days


def sketch_of_text(text: str) -> NameSketch:
    return sketch_of(h for hashes in name_hashes([text], 1) for h in hashes)


def test_a_template_s_items_are_named_apart_and_a_story_s_copies_are_not():
    one, two = (sketch_of_text(notice(p)) for p in PEOPLE[:2])
    assert named_apart(one, two)
    trimmed = notice(PEOPLE[0]).split(". Relatives")[0] + "."  # its first sentences only
    assert not named_apart(one, sketch_of_text(trimmed))
    intro = "Our town mourns a much loved member of the Greystone Rotary Club. " + notice(PEOPLE[0])
    assert not named_apart(one, sketch_of_text(intro))


NAMES = st.sets(st.integers(0, 2**32 - 1), max_size=3 * SKETCH_SIZE)


@given(NAMES, NAMES)
def test_a_page_is_never_named_apart_from_itself_nor_from_one_that_names_more(names, more):
    """A copy with a local intro or a reader's comment names what its story names, and more."""
    sketch = sketch_of(names)
    assert not named_apart(sketch, sketch)
    assert not named_apart(sketch, sketch_of(names | more)) and not named_apart(
        sketch_of(names | more), sketch
    )


def test_a_page_of_few_names_parts_only_from_one_that_shares_none():
    """A card names some of what its story names; two outlets' terms of use name each its own."""
    few = sketch_of(range(MIN_MISSING - 1))
    assert named_apart(few, sketch_of(range(1000, 1040)))
    assert named_apart(few, sketch_of([1000]))
    assert not named_apart(few, sketch_of([0, *range(1000, 1040)]))
    assert not named_apart(few, sketch_of([2, 1000]))


def test_a_page_of_few_names_is_not_parted_by_names_beyond_the_other_s_sketch():
    """The other page names more than its sketch holds: a name past its reach may be among them."""
    many = sketch_of(range(1000, 1000 + 3 * SKETCH_SIZE))
    beyond = sketch_of([2000, 2001])  # past the sketch's largest hash, 1063
    assert many.reach < 2000 and not named_apart(beyond, many)
    assert named_apart(sketch_of([5, 6]), many)


def test_two_outlets_terms_of_use_are_pages_of_their_own():
    """Each outlet's terms page is one sentence naming it: shingles take them for copies."""
    engine = Deduplicator(DedupConfig())
    terms = (
        "By accessing {paper} you agree to these terms. Content is provided for personal, "
        "non-commercial use only. Reproduction of any part of this site without permission is prohibited."
    )
    pages = [
        Page(f"terms-{i}", html=CHROME.format(paper=paper, body=f"<p>{terms.format(paper=paper)}</p>"))
        for i, paper in enumerate(("Prairie Star", "NewsBrief"))
    ]
    decisions = engine.process_batch(pages, [1_000, 2_000])
    assert [d.status for d in decisions] == ["unique", "unique"]
    first, second = engine.index.get("terms-0"), engine.index.get("terms-1")
    assert first is not None and second is not None
    assert engine.measure(first.signature, None, [second]).jaccard[0] >= DedupConfig().threshold


def test_a_trimmed_copy_that_adds_a_line_is_not_named_apart():
    """The story names 20 things; its copy keeps the first 10 and adds 3 of its own."""
    story, copy = sketch_of(range(20)), sketch_of([*range(10), 100, 101, 102])
    assert not named_apart(story, copy)


def test_a_sketch_is_bounded_and_counts_every_name():
    sketch = sketch_of(range(500, 0, -1))
    assert sketch.count == 500 and sketch.hashes.size == SKETCH_SIZE
    assert np.all(np.diff(sketch.hashes.astype(np.int64)) > 0)
    assert isinstance(sketch, NameSketch)


def test_notices_of_one_template_are_stories_of_their_own_and_a_notice_s_copy_joins_it():
    """Through the engine: three funeral notices of one template at three papers decide unique;
    the first notice printed again by a sister paper, inside its own chrome, is its copy."""
    engine = Deduplicator(DedupConfig())
    pages = [
        Page(
            f"n{i}",
            html=CHROME.format(paper=f"The {p['town']} Times", body=f"<p>{notice(p)}</p>"),
            source=f"{str(p['town']).lower()}.example",
        )
        for i, p in enumerate(PEOPLE)
    ]
    copy = Page(
        "copy",
        html=CHROME.format(paper="The Eastfield Star", body=f"<p>{notice(PEOPLE[0])}</p>"),
        source="eastfield.example",
    )
    decisions = engine.process_batch([*pages, copy], [1_000, 2_000, 3_000, 4_000])
    assert [d.status for d in decisions] == ["unique", "unique", "unique", "duplicate"]
    assert decisions[3].duplicate_of == "n0"
    first, second = engine.index.get("n0"), engine.index.get("n1")
    assert first is not None and second is not None
    resemblance = engine.measure(first.signature, None, [second]).jaccard[0]
    assert resemblance >= DedupConfig().threshold  # shingles alone take them for copies
