"""The site stage on its own: a Signer fed typed messages (stream_lsh.pipeline.messages), read
through what it sends to the decide partition."""

import random

import numpy as np
import pytest
from conftest import prose

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.prepare import Preparer
from stream_lsh.pipeline.messages import (
    InputMark,
    Message,
    OwnerChange,
    PageToSign,
    ReleaseMark,
    Retraction,
    SignedForDecision,
    unpack_array,
)
from stream_lsh.pipeline.outbox import Outbox, Stage
from stream_lsh.pipeline.routing import Layout
from stream_lsh.pipeline.signer import Signer

LAYOUT = Layout(2)
PREPARER = Preparer(DedupConfig())
T0 = 1_772_323_200_000


def page(page_id, text, *, site="a.example", clock=T0, query=False, body=7):
    blocks = tuple(line for line in text.split("\n") if line)
    return PageToSign(
        page_id,
        query,
        site,
        "en",
        clock,
        clock / 1000,
        None,
        body,
        blocks,
        None if query else f'{{"id": "{page_id}"}}',
    )


def sent(out: Outbox, stage: str, *, first: bool = False) -> dict[int, list[Message]]:
    return {
        p: list(records) for p, records in (out.first if first else out.internal)[stage].items() if records
    }


def test_a_page_goes_to_the_decide_partition_signed_with_its_line_and_site():
    signer = Signer(PREPARER, LAYOUT, 0)
    out = signer.handle([page("p1", prose(1, 200))])
    (signed,) = sent(out, Stage.DECIDE)[0]
    assert isinstance(signed, SignedForDecision) and not signed.query
    assert signed.raw == '{"id": "p1"}' and signed.clock == T0 and signed.site == "a.example"
    [expected] = PREPARER.sign([signer._prepare(page("p1", prose(1, 200)))])
    assert np.array_equal(unpack_array(signed.signature, "<u4", np.uint32), expected.signature)
    assert np.array_equal(unpack_array(signed.band_keys, "<u8", np.uint64), expected.band_keys)
    assert signed.content_hash == expected.prepared.content_hash and signed.shingles is None


def test_a_page_too_short_to_sign_goes_on_without_a_signature():
    out = Signer(PREPARER, LAYOUT, 0).handle([page("short", "Too short.")])
    (signed,) = sent(out, Stage.DECIDE)[0]
    assert signed.signature is None and signed.band_keys is None


def test_a_query_carries_neither_its_line_nor_its_site_and_does_not_teach_the_learner():
    signer = Signer(PREPARER, LAYOUT, 0)
    shared = "Subscribe to our newsletter for the best of the week in your inbox every single morning."
    for i in range(3):
        signer.handle([page(f"q{i}", f"{prose(10 + i, 120)}\n{shared}", query=True)])
    assert signer.learner is not None and signer.learner.boilerplate_blocks == 0
    out = signer.handle([page("q9", prose(3, 150), query=True)])
    (signed,) = sent(out, Stage.DECIDE)[0]
    assert signed.query and signed.raw is None and signed.site is None


def test_retractions_go_on_in_order_with_the_pages_and_before_the_release_point():
    signer = Signer(PREPARER, LAYOUT, 0, inputs=1)
    out = signer.handle(
        [
            page("p1", prose(1, 200), clock=T0),
            Retraction("p0", T0 + 1),
            page("p2", prose(2, 200), clock=T0 + 2),
            InputMark(0, [T0 + 2, "p2"], idle=True),
        ]
    )
    assert [(type(m).__name__, getattr(m, "id", None)) for m in sent(out, Stage.DECIDE)[0]] == [
        ("SignedForDecision", "p1"),
        ("Retraction", "p0"),
        ("SignedForDecision", "p2"),
        ("ReleaseMark", None),
    ]


def test_pages_wait_for_the_release_point_and_go_on_in_clock_order():
    signer = Signer(PREPARER, LAYOUT, 0, inputs=2)
    out = signer.handle(
        [
            page("p2", prose(2, 200), clock=T0 + 2),
            InputMark(1, [T0 + 2, "p2"], idle=True),
            page("p1", prose(1, 200), clock=T0 + 1),
            InputMark(0, [T0 + 1, "p1"]),
        ]
    )
    assert [m.id for m in sent(out, Stage.DECIDE)[0] if isinstance(m, SignedForDecision)] == []
    assert len(signer.held) == 2  # input partition 0's next record may still come before p2
    out = signer.handle([InputMark(0, [T0 + 3, "p3"], idle=True)])
    assert [getattr(m, "id", None) for m in sent(out, Stage.DECIDE)[0]] == ["p1", "p2", None]
    assert not signer.held


def test_a_page_behind_the_release_point_is_late_and_goes_on_at_once():
    signer = Signer(PREPARER, LAYOUT, 0, inputs=1)
    signer.handle([page("p5", prose(5, 200), clock=T0 + 5), InputMark(0, [T0 + 5, "p5"], idle=True)])
    out = signer.handle([page("p1", prose(1, 200), clock=T0 + 1)])
    assert [getattr(m, "id", None) for m in sent(out, Stage.DECIDE)[0]] == ["p1"]
    assert signer.held.late == 1


@pytest.mark.parametrize("seed", range(4))
def test_the_learner_reads_a_site_in_clock_order_whatever_the_interleaving(seed):
    """Pages of one site come from two input partitions in an order that depends on timing; the
    learner, which remembers what it has read, must read them as batch does: each page's text
    (its content hash) is what one learner fed in clock order gives it."""
    rng = random.Random(seed)
    chrome = ["Subscribe to our newsletter for the best of the week in your inbox every morning."]
    chrome.append("Our journalism is funded by readers like you who choose to support it each month.")
    pages = [
        page(
            f"p{i:02d}",
            "\n".join([prose(100 + i, 120), *rng.sample(chrome, rng.randint(0, 2))]),
            clock=T0 + i,
        )
        for i in range(24)
    ]
    in_order = Preparer(DedupConfig())
    reference = Signer(in_order, LAYOUT, 0)
    expected = {
        m.id: m.content_hash
        for m in sent(reference.handle(pages), Stage.DECIDE)[0]
        if isinstance(m, SignedForDecision)
    }
    signer = Signer(PREPARER, LAYOUT, 0, inputs=2)
    streams = {0: [p for p in pages if rng.random() < 0.5]}
    streams[1] = [p for p in pages if p not in streams[0]]
    got: dict[str, int] = {}
    arrival: list[str] = []
    while streams[0] or streams[1]:
        source = rng.choice([s for s in (0, 1) if streams[s]])
        batch = streams[source][: rng.randint(1, 4)]
        del streams[source][: len(batch)]
        arrival += [p.id for p in batch]
        last = batch[-1]
        mark = InputMark(source, [last.clock, last.id], idle=not streams[source])
        out = signer.handle([*batch, mark])
        got |= {
            m.id: m.content_hash
            for m in sent(out, Stage.DECIDE).get(0, [])
            if isinstance(m, SignedForDecision)
        }
    assert got == expected
    assert reference.learner is not None and reference.learner.boilerplate_blocks == 2  # it learnt the chrome
    assert arrival != sorted(arrival)  # and the pages did come out of clock order


def test_marks_of_every_input_partition_are_forwarded_as_one_release_point_and_owner_changes_withdraw():
    signer = Signer(PREPARER, LAYOUT, 1, inputs=2)
    out = signer.handle([InputMark(0, [T0 + 5, "a"])])
    assert sent(out, Stage.DECIDE)[0] == [ReleaseMark(1, None, (1,))]  # input partition 1 has said nothing
    out = signer.handle([InputMark(1, [T0 + 2, "b"], idle=True)])
    assert sent(out, Stage.DECIDE)[0][0].mark == [T0 + 5, ""]  # up to its clock
    assert sent(signer.handle([InputMark(0, [T0 + 5, "a"])]), Stage.DECIDE) == {}  # unchanged: not resent
    out = signer.handle([OwnerChange(1)])
    withdrawn = sent(out, Stage.DECIDE)[0][0]  # 1 holds the point at its last mark again
    assert withdrawn.mark == [T0 + 2, ""] and withdrawn.held_back_by == (1,)
