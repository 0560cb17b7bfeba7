"""The wording a page's names are set in (stream_lsh.core.wording): two items of one template
put other names into the same clauses, an edited copy of a story does not."""

from __future__ import annotations

import numpy as np
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.dedup import Deduplicator, export_state, import_state
from stream_lsh.core.names import NO_NAMES, name_hashes, sketch_of
from stream_lsh.core.page import Page
from stream_lsh.core.scheme import Scheme, check_compatible
from stream_lsh.core.wording import (
    _DIGIT_WORD,
    EARLIER_RULES,
    LEAD_WORDS,
    MAX_SLOTS,
    SKELETONS,
    _at_identifiers,
    _identifier,
    _lows,
    _mark,
    _marks,
    _name,
    _ordered_mark,
    _quotes_identifier,
    different_items,
    page_slots,
    slot_hashes,
    slots_in,
    worded_apart,
)

SEED = 1

CLOSURE = [
    "{school} will be closed today, Tuesday 12 November, due to severe storm damage and power outages.",
    "The Department of Education said the decision was made in the interest of student and staff safety. "
    "Parents and carers are advised not to send children to school.",
    "School bus services on the {run} run will not operate.",
]
APPEAL = [
    "Police are appealing for information after a silver Holden Commodore sedan was stolen from "
    "{street}, {town}, between 10pm on Sunday and 8am on Monday.",
    "Officers from {town} Police Station attended and are investigating. Inquiries are continuing.",
    "Anyone with information or dashcam footage is urged to contact Crime Stoppers on 1800 333 000.",
]


def sketch(paragraphs: list[str]) -> object:
    """A page's names and slots as the engine keeps them, from its paragraphs."""
    names = name_hashes(paragraphs, SEED)
    return sketch_of((h for block in names for h in block), page_slots(slot_hashes(paragraphs, SEED)))


def key(wording: str) -> int:
    """A wording's key in the slots: the high half of its hash."""
    return xxhash.xxh32_intdigest(wording.encode(), SEED) >> 16


def lows(*names: str) -> set[int]:
    """The low halves slots keep for these names."""
    return {low for name in names for low in _lows(name, SEED)}


def by_wording(values: tuple[int, ...]) -> dict[int, set[int]]:
    """Slot values grouped by their wording's key."""
    found: dict[int, set[int]] = {}
    for value in values:
        found.setdefault(value >> 16, set()).add(value & 0xFFFF)
    return found


def closure(school: str, run: str = "western") -> list[str]:
    return [p.format(school=school, run=run) for p in CLOSURE]


def appeal(town: str, street: str = "Railway Pde") -> list[str]:
    return [p.format(town=town, street=street) for p in APPEAL]


def test_a_slot_is_a_clause_s_wording_over_a_name_set_in_it():
    (lead,) = [slots_in(closure("Millbrook Primary School")[0], SEED)]
    skeletons = {value >> 16 for value in lead}
    # the clause's skeleton and the sentence's opening ("will be closed today"), each over
    # millbrook, primary and school; no day nor number
    assert len(skeletons) == 2 and len(lead) == 6
    other = slots_in(closure("Taylor Park Primary School")[0], SEED)
    assert {value >> 16 for value in other} == skeletons  # the same wording ...
    assert set(lead) != set(other)  # ... around other names


def test_clauses_without_wording_or_names_have_no_slot():
    assert slots_in("Smith said on Tuesday.", SEED) == ()  # fewer than three words in small letters
    assert slots_in("it was a quiet night in the town and nobody was hurt.", SEED) == ()  # no name
    assert slots_in("Related: Millbrook Primary School closed after the storm", SEED) == ()  # a pointer
    assert slots_in("Millbrook School Closed By Storm", SEED) == ()  # a heading


def test_a_sentence_s_first_word_that_is_no_name_is_a_word_of_its_wording():
    """ "Please quote reference E51383826": the sentence's first word is no name but a word of the
    skeleton, so the clause has one and sets its reference in it. Two appeals of one template in
    two towns, each with its reference, are other items (the nineteenth outside set's police
    appeals, one town each way); an edited copy of one is not."""

    def appeal_page(town: str, reference: str, aside: str) -> list[str]:
        return [
            "Police are appealing for information after a number of letterboxes were damaged in "
            f"Station St, {town}, between 8pm on Sunday and 8am on Monday. Officers from {town} "
            f"Police Station attended and are investigating. {aside} Anyone with information or "
            "dashcam footage is urged to contact police or Crime Stoppers on 1800 333 000. "
            f"Please quote reference {reference}."
        ]

    one = sketch(appeal_page("Larkspur", "E51383826", "A crime scene was established."))
    other = sketch(appeal_page("Yarran", "E91891893", "Inquiries are continuing."))
    edited = sketch(appeal_page("Larkspur", "E51383826", "Inquiries are continuing."))
    assert slots_in("Please quote reference E51383826.", SEED)
    assert different_items(one, other) and different_items(other, one)
    assert not different_items(one, edited)


def test_two_items_that_quote_their_own_reference_are_other_items():
    """A police brief's reference number is an identifier: two briefs of one template that quote
    their own in the same wording are other items, though nothing else in shared wording differs;
    a copy of one, a name's spelling fixed, quotes its. A page saved under an earlier rule marks no
    identifier, and is compared by the count of names alone."""

    def brief(act: str, reference: str, station: str = "Millbank") -> list[str]:
        return [
            f"Police are appealing for public assistance after a person {act} Main St, Marlow Bay, about "
            "2am on Monday 6 March.",
            f"Officers from {station} Station were called to the scene and investigations are continuing.",
            f"Anyone with information is urged to contact Policelink on 131 444, quoting reference number "
            f"{reference}.",
        ]

    one = sketch(brief("damaged property at", "QP17032965028"))
    other = sketch(brief("stole a vehicle from", "QP17037227663"))
    spelled = sketch(brief("damaged property at", "QP17032965028", station="Milbank"))
    assert different_items(one, other) and different_items(other, one)
    assert not different_items(one, spelled)
    assert _identifier("qp17032965028") and not _identifier("a380") and not _identifier("1800333000")
    marks = _marks(set(one.slots.tolist()), set(one.slots.tolist()))
    earlier = sketch_of(one.hashes.tolist(), np.array(sorted(set(one.slots.tolist()) - marks), np.uint32))
    assert marks and not different_items(earlier, other)


def test_two_notices_that_give_their_reference_before_their_own_words_are_other_items():
    """An agency's tender notices give their reference in one wording, then each its own service in
    small words: the clause is cut after the reference, so the references face each other in
    "_ has released _" (two words in small letters: enough for a part that ends at an
    identifier). A copy of one, trimmed, keeps its reference; a clause with nothing after its
    identifier is not cut."""

    def notice(reference: str, service: str, value: str) -> list[str]:
        return [
            f"The Sydney Water has released Tender {reference} seeking offers for {service}. The contract "
            f"has an estimated value of {value}.",
            "Submissions close at 2pm on 26 July 2024 and must be lodged through the electronic "
            "tendering portal. Late submissions will not be accepted.",
        ]

    one = notice("RFT20247896", "cleaning services for council facilities", "$7,440,000")
    other = notice("RFT20244723", "supply of bulk diesel and unleaded fuel", "$7,800,000")
    assert different_items(sketch(one), sketch(other)) and different_items(sketch(other), sketch(one))
    assert not different_items(sketch(one), sketch(one[:1]))
    assert key("_ has released _") in {value >> 16 for value in slots_in(one[0], SEED)}  # the cut
    assert _at_identifiers("Tender RFT20247896 seeking offers") == [
        ("Tender RFT20247896", True),
        (" seeking offers", False),
    ]
    assert _at_identifiers("please quote reference QP17032965028.") == [
        ("please quote reference QP17032965028.", False)
    ]


def test_two_notices_of_a_template_that_varies_its_small_words_too_are_other_items():
    """Road notices of one template: the closed stretch and the reason differ in small words, so the
    clauses share no skeleton, but the sentences open alike ("will be closed between") and each
    sets its own street and town. A trimmed copy, and a copy with a local intro, stay joined."""

    def notice(street: str, town: str, stretch: str, reason: str) -> list[str]:
        return [
            f"{street}, {town} will be closed between {stretch} from 9am to 6pm on Thursday 14 "
            f"November for {reason}.",
            "Detours will be signposted. Council apologises for any inconvenience. Enquiries to "
            "council's customer service centre.",
        ]

    one = notice("Railway Pde", "Cedar Flats", "the roundabout and the bridge", "tree removal")
    other = notice("Banksia Ave", "Mount Ardent", "Railway Pde and High St", "road resurfacing")
    assert different_items(sketch(one), sketch(other)) and different_items(sketch(other), sketch(one))
    local = ["Motorists in Wattle Bay heading to Cedar Flats should plan ahead.", *one]
    assert not different_items(sketch(one), sketch(one[:1]))
    assert not different_items(sketch(one), sketch(local)) and not different_items(sketch(local), sketch(one))


def test_a_sentence_s_opening_is_a_slot_over_the_names_of_the_clauses_it_comes_from():
    """The opening of each sentence that sets names, over the names of the clauses its words come
    from: not an attribution after them, nor another sentence's. A sentence at a piece's end has
    the same opening as one before another."""
    piece = (
        "Railway Pde, Cedar Flats will be closed between the roundabout and the bridge, Mayor Jane "
        "Smith told The Age. Parents in Eastbrook were told on Monday."
    )
    slots = by_wording(slots_in(piece, SEED))
    assert slots[key("^will be closed between")] == lows("railway", "pde", "cedar", "flats")
    assert slots[key("^parents in were told")] == lows("eastbrook")
    alone = by_wording(slots_in("Main St in Eastbrook will be closed.", SEED))
    before = by_wording(slots_in("Main St in Eastbrook will be closed. Detours apply.", SEED))
    opening = key("^in will be closed")
    assert alone[opening] == before[opening] == lows("main", "st", "eastbrook")


def test_copies_in_each_outlet_s_spelling_are_not_other_items():
    """Found on the twenty-sixth outside set: a British outlet respells the names of a wire story
    ("Department of Defense", "Trauma Center"); the names are compared in one spelling."""
    story = (
        "The Department of {defense}'s health record system is now operational in the only Level 1 "
        "Trauma {center} in the {defense} Department, officials said."
    )
    us = sketch([story.format(defense="Defense", center="Center"), "Full deployment is expected in 2023."])
    uk = sketch([story.format(defense="Defence", center="Centre"), "Full deployment is expected in 2023."])
    assert not different_items(us, uk) and not different_items(uk, us)
    assert _name("Centre") == _name("Center") == "center" and _name("Labour") == "labor"


def test_copies_whose_attributions_differ_are_not_other_items():
    """Found by review: two outlets credit a quote each to itself or to another; the names after the
    opening's clauses are not read."""
    story = "Council will close the Eastbrook pool for repairs from Monday, Mayor Jane Smith told {paper}."
    one = sketch([story.format(paper="The Sydney Morning Herald"), "The pool reopens in May."])
    other = sketch([story.format(paper="The Age"), "The pool reopens in May."])
    assert not different_items(one, other) and not different_items(other, one)


def test_a_wire_credit_written_close_is_a_dateline():
    """A release as the wire sends it and as the company posts it: the same sentence after
    another dateline, and the same slots."""
    sentence = (
        "Halcyon Networks (NASDAQ: HLCN) today announced that its 2017 Annual Meeting of Shareholders "
        "will be held in San Jose."
    )
    wire = slots_in(f"SAN JOSE--(BUSINESS NEWSLINE)--{sentence}", SEED)
    own = slots_in(f"SAN JOSE (March 14, 2017) — {sentence}", SEED)
    assert wire and wire == own


def test_a_copy_that_corrects_a_transposed_reference_is_not_another_item():
    """Found on the twenty-fourth outside set: a release misprinted its case number, two digits
    transposed, and a later copy printed it right. The two quote the same characters in another
    order, which marks each identifier beside it; another case's number still parts them."""

    def ruling(case: str) -> list[str]:
        return [
            f"The Federal Court of Australia has dismissed proceedings in Case No. {case} brought by the "
            "Fair Work Ombudsman against Crestview Health.",
            "The court found the company had not breached the award.",
        ]

    misprinted, corrected = sketch(ruling("FCA-2024-163723")), sketch(ruling("FCA-2024-136723"))
    other = sketch(ruling("FCA-2024-118342"))
    assert not different_items(misprinted, corrected) and not different_items(corrected, misprinted)
    assert different_items(misprinted, other) and different_items(other, corrected)
    assert len(lows("fca-2024-163723")) == 4 and lows("fca-2024-163723") & lows("fca-2024-136723")


def test_a_wire_dateline_is_not_read():
    """One agency's copy and another's: "SYDNEY (AAP) -" against "SYDNEY (Reuters) -"."""
    body = "Police said a man had been arrested near the Harbour Bridge after the chase."
    one, other = (
        slots_in(f"SYDNEY (AAP) - {body}", SEED),
        slots_in(f"SYDNEY, Nov 12 (Reuters) -- {body}", SEED),
    )
    assert one == other == slots_in(body, SEED)


def test_two_items_of_a_template_are_worded_apart():
    assert worded_apart(
        sketch(closure("Millbrook Primary School")), sketch(closure("Taylor Park Primary School"))
    )
    assert worded_apart(sketch(appeal("Yarran")), sketch(appeal("Cobalt Springs")))
    assert worded_apart(sketch(appeal("Yarran", "Station St")), sketch(appeal("Larkspur", "Main St")))
    # one word for one word is as often an edit ("Yesterday" for "Today" before a name) as another
    # item: it takes three names of their own between the two pages
    one, other = sketch(closure("Ironbark Primary School")), sketch(closure("Millbrook Primary School"))
    assert not worded_apart(one, other)
    assert worded_apart(one, sketch(closure("North Millbrook Primary School")))


def test_a_story_s_copies_are_not_worded_apart():
    story = closure("Millbrook Primary School")
    copies = {
        "itself": story,
        "trimmed": story[:2],
        "a local intro": ["Storms hit the Cobalt Springs district overnight.", *story],
        "an intro and a trim": ["Storms hit the Cobalt Springs district overnight.", *story[:2]],
        "the title dropped": [story[0], story[1].replace("The Department", "the department"), story[2]],
        "a name moved": [story[0], story[1] + " Millbrook families were told by text.", story[2]],
        "a number updated": [story[0].replace("12 November", "13 November"), *story[1:]],
    }
    for edit, copy in copies.items():
        assert not worded_apart(sketch(story), sketch(copy)), edit
        assert not worded_apart(sketch(copy), sketch(story)), edit


def test_a_wording_said_twice_on_a_page_is_no_slot():
    """A live page's entries, a table of results: a page fetched again with new entries and some
    old ones gone is still the page."""
    entries = ["Goal! {0} 1, Rovers 0. {1} scores with a header from the left side of the box."]
    first = [entries[0].format("Cougars", name) for name in ("Andrew Sullivan", "Mark Hill")]
    later = [entries[0].format("Cougars", name) for name in ("Mark Hill", "Tom Price")]
    assert not page_slots(slot_hashes(first, SEED)).size
    assert not worded_apart(sketch(first), sketch(later))
    repeated_in_one_block = slots_in(" ".join(first), SEED)
    assert {value & 0xFFFF for value in repeated_in_one_block} == {0}  # marked said twice


def test_a_page_keeps_the_slots_of_its_smallest_skeletons_at_most():
    words = [chr(97 + i // 26) + chr(97 + i % 26) for i in range(40)]  # a wording of its own each
    paragraphs = [
        f"The council of {w.title()}ville approved the plan for the {w}field road today." for w in words
    ]
    slots = page_slots(slots_in(paragraph, SEED) for paragraph in paragraphs)
    assert 0 < slots.size <= MAX_SLOTS and len({v >> 16 for v in slots.tolist()}) <= SKELETONS
    assert np.all(np.diff(slots.astype(np.int64)) > 0)
    fewer = page_slots(slots_in(paragraph, SEED) for paragraph in paragraphs[:30])  # a trimmed copy
    shared = {v >> 16 for v in slots.tolist()} & {v >> 16 for v in fewer.tolist()}
    assert len(shared) >= SKELETONS // 2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(CLOSURE + APPEAL), min_size=1, max_size=6),
    st.sampled_from(["Millbrook", "Taylor Park", "Yarran", "Cobalt Springs"]),
    st.data(),
)
def test_a_page_is_never_worded_apart_from_itself_nor_from_a_part_of_it(templates, town, data):
    paragraphs = [
        t.format(school=f"{town} School", run="northern", town=town, street="High St") for t in templates
    ]
    kept = data.draw(st.lists(st.sampled_from(paragraphs), min_size=1, max_size=len(paragraphs)))
    page, part = sketch(paragraphs), sketch(kept)
    assert not worded_apart(page, page)
    assert not worded_apart(page, part) and not worded_apart(part, page)
    assert worded_apart(page, part) == worded_apart(part, page)


def _worded_apart_as_defined(one, other) -> bool:
    """The rule as the module doc states it, skeleton by skeleton, without shortcuts."""
    mine, theirs = one.slots.tolist(), other.slots.tolist()
    my_names = {v & 0xFFFF for v in one.hashes.tolist() + mine}
    their_names = {v & 0xFFFF for v in other.hashes.tolist() + theirs}

    def read(values: list[int]) -> tuple[set, set, set]:
        """The page's (skeleton, name) pairs less the marks and identifiers' characters in order,
        all of them, and those characters in order."""
        pairs = {(v >> 16, v & 0xFFFF) for v in values}
        ordered = {(k, n) for k, n in pairs if (k, _ordered_mark(n)) in pairs}
        marks = {(k, _mark(n)) for k, n in pairs if (k, _mark(n)) in pairs}
        return pairs - marks - ordered - {(k, _ordered_mark(n)) for k, n in ordered}, pairs, ordered

    (my_pairs, my_all, my_ordered), (their_pairs, their_all, their_ordered) = read(mine), read(theirs)
    one_identifier = {k for k, _ in my_ordered & their_ordered}  # the same characters in one wording
    shared = {k for k, _ in my_pairs} & {k for k, _ in their_pairs}
    own_pairs = {(k, n) for k, n in my_pairs if k in shared and n not in their_names}
    their_own_pairs = {(k, n) for k, n in their_pairs if k in shared and n not in my_names}
    own, their_own = {n for _, n in own_pairs}, {n for _, n in their_own_pairs}
    if not own or not their_own:
        return False
    return len(own) + len(their_own) >= 3 or (
        any((k, _mark(n)) in my_all and k not in one_identifier for k, n in own_pairs)
        and any((k, _mark(n)) in their_all and k not in one_identifier for k, n in their_own_pairs)
    )


_SLOT = st.builds(lambda key, name: key << 16 | name, st.integers(1, 3), st.integers(0, 5))


def _with_marks(data, slots: set[int]) -> np.ndarray:
    """Slots, some of whose names are marked as identifiers, some of those with their characters
    in order (few values, so that two pages' collide), marked too."""
    marked = data.draw(st.sets(st.sampled_from(sorted(slots)))) if slots else set()
    values = slots | {v >> 16 << 16 | _mark(v & 0xFFFF) for v in marked}
    for v in data.draw(st.sets(st.sampled_from(sorted(marked)), min_size=1)) if marked else set():
        ordered = data.draw(st.sampled_from((6, 6, 6, 7)))
        values |= {v >> 16 << 16 | ordered, v >> 16 << 16 | _ordered_mark(ordered)}
    return np.array(sorted(values), dtype=np.uint32)


@settings(max_examples=400, deadline=None)
@given(
    st.sets(_SLOT, max_size=5), st.sets(_SLOT, max_size=5), st.sets(st.integers(0, 5), max_size=2), st.data()
)
def test_the_shortcuts_of_worded_apart_decide_as_the_rule_reads(mine, theirs, names, data):
    """worded_apart looks only at the slots one page has and the other lacks; on any two sets of
    slots (names of small hashes, so that they collide; some marked as identifiers, with their
    characters in order or not) it decides as the rule reads."""
    one = sketch_of(names, _with_marks(data, mine))
    other = sketch_of((), _with_marks(data, theirs))
    assert worded_apart(one, other) == _worded_apart_as_defined(one, other)
    assert worded_apart(other, one) == _worded_apart_as_defined(other, one)


def test_only_the_lead_is_read():
    """The pieces that begin within the article's first LEAD_WORDS words have slots; an item sets
    its own names there."""
    filler = "the council met again on the matter of the road and heard from the residents there."
    paragraphs = [*closure("Millbrook Primary School"), *[filler] * (LEAD_WORDS // 16), *appeal("Yarran")]
    found = slot_hashes(paragraphs, SEED)
    assert found[0] and all(not slots for slots in found[-3:])


def test_pages_without_slots_are_never_worded_apart():
    assert not worded_apart(NO_NAMES, sketch(closure("Millbrook Primary School")))
    assert not different_items(NO_NAMES, NO_NAMES)


CHROME = (
    "<html><head><title>{title} | The {paper}</title></head><body><nav><a href='/'>Home</a></nav>"
    "<main><article><h1>{title}</h1>{body}</article></main>"
    "<footer><p>The {paper} is published by Meridian Country Press. All rights reserved.</p></footer>"
    "</body></html>"
)


def closure_page(page_id: str, school: str, paper: str) -> Page:
    body = "".join(f"<p>{p}</p>" for p in closure(school))
    slug = school.lower().replace(" ", "-")
    return Page(
        page_id,
        html=CHROME.format(title=f"{school} closed today due to storm", paper=paper, body=body),
        url=f"https://{paper.lower()}.example/news/local-news/{slug}-closed-today-{len(page_id)}0{ord(page_id[-1])}/",
        source=f"{paper.lower()}.example",
    )


def test_closures_of_two_schools_are_stories_of_their_own_and_a_closure_s_copy_joins_it():
    """Through the engine: two schools' closures at two papers, alike as shingles (Jaccard ~0.8),
    decide unique; the first printed again by a third paper is its copy."""
    engine = Deduplicator(DedupConfig())
    first, second, copy = engine.process_batch(
        [
            closure_page("a", "Millbrook Primary School", "Gazette"),
            closure_page("b", "Taylor Park Primary School", "Echo"),
            closure_page("c", "Millbrook Primary School", "Star"),
        ],
        [1_000, 2_000, 3_000],
    )
    assert (first.status, second.status) == ("unique", "unique"), second
    assert copy.status == "duplicate" and copy.duplicate_of == "a", copy
    one, other = engine.index.get("a"), engine.index.get("b")
    assert one is not None and other is not None
    assert engine.measure(one.signature, None, [other]).jaccard[0] >= DedupConfig().threshold


def test_saved_state_keeps_the_slots_and_state_saved_before_them_is_read(tmp_path):
    engine = Deduplicator(DedupConfig())
    engine.process_batch([closure_page("a", "Millbrook Primary School", "Gazette")], [1_000])
    header, arrays = export_state(engine)
    again = Deduplicator(DedupConfig())
    import_state(again, header, arrays)
    saved, loaded = engine.index.get("a"), again.index.get("a")
    assert saved is not None and loaded is not None and saved.names.slots.size
    assert np.array_equal(saved.names.slots, loaded.names.slots)

    older = {key: value for key, value in arrays.items() if key not in ("slots", "slot_sizes")}
    scheme = dict(header["scheme"], names_rule=header["scheme"]["names_rule"].split("+")[0])
    before = Deduplicator(DedupConfig())
    import_state(before, {**header, "scheme": scheme}, older)
    entry = before.index.get("a")
    assert entry is not None and entry.names.count and not entry.names.slots.size


def test_a_scheme_before_wording_is_the_same_scheme_and_another_names_rule_is_not():
    import pytest

    from stream_lsh.core.scheme import StateMismatchError

    current = Deduplicator(DedupConfig()).scheme
    base, _, wording = current.names_rule.partition("+")
    assert wording.startswith("wording-")
    released = (  # every wording rule released before this one: its state must still be read
        "wording-1:3:16:64:3:100",
        "wording-2:3:16:64:3:100",
        "wording-3:3:16:64:3:100:5",
        "wording-4:3:16:64:3:100:5:2",
        "wording-5:3:16:64:3:100:5:2:4",
        "wording-6:3:16:64:3:100:5:2:4",
        "wording-7:3:16:64:3:100:5:2:4",
    )
    released_names = ("names-1:64:4:0.35",)  # ... and every names rule before this one
    assert set(released) <= EARLIER_RULES
    for older in ("", base, *(f"{names}+{rule}" for names in (base, *released_names) for rule in released)):
        check_compatible(current, Scheme.from_dict({**current.to_dict(), "names_rule": older}))
    for names in released_names:
        check_compatible(current, Scheme.from_dict({**current.to_dict(), "names_rule": names}))
    for other in ("names-0:1", f"{base}+wording-0:1", f"names-0:1+{wording}"):
        with pytest.raises(StateMismatchError):
            check_compatible(current, Scheme.from_dict({**current.to_dict(), "names_rule": other}))
    earlier = Scheme.from_dict({**current.to_dict(), "names_rule": f"{base}+{min(EARLIER_RULES)}"})
    with pytest.raises(StateMismatchError):  # state of the newer rule, read by the older
        check_compatible(earlier, current)


def test_copy_editors_changes_are_not_other_items():
    """Found by review: a figure updated (44C to 45C), a rank cut short ("Det Sgt" for "Detective
    Sergeant"), accents an ASCII feed drops ("Sao Paulo" for "São Paulo") set no name of their own."""
    pairs = [
        (
            "Forecasters said Perth would reach 44C on Saturday and Kalgoorlie 41C, with fire bans set.",
            "Forecasters said Perth would reach 45C on Saturday and Kalgoorlie 42C, with fire bans set.",
        ),
        (
            "Detective Sergeant Jane Walsh said officers from Ballarat had searched the property at night.",
            "Det Sgt Jane Walsh said officers from Ballarat had searched the property at night.",
        ),
        (
            "President Luiz Inácio Lula da Silva flew to São Paulo after the floods in Paraná and Bahia.",
            "President Luiz Inacio Lula da Silva flew to Sao Paulo after the floods in Parana and Bahia.",
        ),
    ]
    for story, copy in pairs:
        assert not worded_apart(sketch([story]), sketch([copy])), copy


# a reference: a letter or none, then groups of digits joined by a mark ("FCA-2024-163723",
# "Q1.2345", "A12/345"); beside words, dates and phone numbers
_REFERENCE = st.builds(
    lambda letter, groups, mark: letter + mark.join(groups),
    st.sampled_from(["", "A", "q", "FCA-", "É"]),
    st.lists(st.text(alphabet="0123456789", min_size=1, max_size=4), min_size=1, max_size=4),
    st.sampled_from(["", "-", ".", "'", "/", " ", "_"]),
)
_TEXT_WITH_FIGURES = st.lists(
    st.one_of(_REFERENCE, st.sampled_from(["12 November 2024", "0412 345 678", "reference", "Tender"])),
    max_size=6,
).map(" ".join)


@given(_TEXT_WITH_FIGURES)
def test_the_quick_identifier_check_answers_as_the_words_do(text):
    """The first look for digits in one run only spares the word loop: it answers as reading each
    word would, on texts of words, figures, dates and references."""
    digits = sum(text.count(digit) for digit in "0123456789")
    assert _quotes_identifier(text) == (digits >= 5 and any(map(_identifier, _DIGIT_WORD.findall(text))))
