"""The site stage on its own: a Signer fed typed messages (stream_lsh.pipeline.messages), read
through what it sends to the decide partition."""

import numpy as np
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
    [expected] = PREPARER.sign([signer._prepare(page("p1", prose(1, 200)))[0]])
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


def test_boilerplate_learnt_here_is_flagged_to_the_other_site_partitions_and_flags_teach():
    shared = "Subscribe to our newsletter for the best of the week in your inbox every single morning."
    signer = Signer(PREPARER, Layout(3), 1)
    flags = []
    for i in range(4):
        out = signer.handle([page(f"p{i}", f"{prose(20 + i, 150)}\n{shared}")])
        flags += [(p, r) for p, records in sent(out, Stage.SITES, first=True).items() for r in records]
    assert sorted({p for p, _ in flags}) == [0, 2] and flags[0][1].fingerprints
    other = Signer(PREPARER, Layout(3), 0)
    other.handle([flags[0][1]])
    assert other.learner is not None and other.learner.boilerplate_blocks == len(flags[0][1].fingerprints)


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
