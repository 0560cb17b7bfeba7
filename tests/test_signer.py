"""The site stage on its own: a Signer fed typed messages (stream_lsh.pipeline.messages), read
through what it sends to the homes and the band partitions."""

from conftest import prose

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.prepare import Preparer
from stream_lsh.pipeline.messages import (
    BandMark,
    InputMark,
    Message,
    OwnerChange,
    PageToSign,
)
from stream_lsh.pipeline.outbox import Outbox, Stage
from stream_lsh.pipeline.routing import Layout
from stream_lsh.pipeline.signer import Signer

LAYOUT = Layout(2, 3, 4)
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


def test_a_page_is_registered_at_its_home_first_then_probes_every_band_partition():
    signer = Signer(PREPARER, LAYOUT, 0)
    out = signer.handle([page("p1", prose(1, 200))])
    (registration,) = [r for r in sent(out, Stage.HOMES, first=True)[LAYOUT.home("p1")]]
    assert registration.targets == (0, 1, 2) and not registration.no_content
    assert registration.raw == '{"id": "p1"}' and registration.clock == T0
    probes = {p: records[0] for p, records in sent(out, Stage.BANDS).items()}
    assert sorted(probes) == [0, 1, 2] and all(probe.home == LAYOUT.home("p1") for probe in probes.values())
    keys = [key for probe in probes.values() for key in probe.keys]
    assert sorted(band for band, _ in keys) == list(range(PREPARER.banding.bands))
    assert all(LAYOUT.band(key) == partition for partition, probe in probes.items() for _, key in probe.keys)
    owners = [p for p, probe in probes.items() if probe.content_hash is not None]
    assert len(owners) == 1 and all(
        (probe.signature is not None) == bool(probe.keys or probe.content_hash) for probe in probes.values()
    )


def test_a_page_too_short_to_sign_is_registered_as_no_content_and_probes_carry_nothing():
    out = Signer(PREPARER, LAYOUT, 0).handle([page("short", "Too short.")])
    (registration,) = sent(out, Stage.HOMES, first=True)[LAYOUT.home("short")]
    assert registration.no_content
    probes = [r for records in sent(out, Stage.BANDS).values() for r in records]
    assert len(probes) == 3 and all(
        not p.keys and p.signature is None and p.content_hash is None for p in probes
    )


def test_a_query_is_probed_but_neither_carries_its_line_nor_teaches_the_learner():
    signer = Signer(PREPARER, LAYOUT, 0)
    shared = "Subscribe to our newsletter for the best of the week in your inbox every single morning."
    for i in range(3):
        signer.handle([page(f"q{i}", f"{prose(10 + i, 120)}\n{shared}", query=True)])
    assert signer.learner is not None and signer.learner.boilerplate_blocks == 0
    out = signer.handle([page("q9", prose(3, 150), query=True)])
    (registration,) = sent(out, Stage.HOMES, first=True)[LAYOUT.home("q9")]
    assert registration.query and "raw" not in registration.to_wire()


def test_boilerplate_learnt_here_is_flagged_to_the_other_site_partitions_and_flags_teach():
    shared = "Subscribe to our newsletter for the best of the week in your inbox every single morning."
    signer = Signer(PREPARER, Layout(3, 3, 4), 1)
    flags = []
    for i in range(4):
        out = signer.handle([page(f"p{i}", f"{prose(20 + i, 150)}\n{shared}")])
        flags += [(p, r) for p, records in sent(out, Stage.SITES, first=True).items() for r in records]
    assert sorted({p for p, _ in flags}) == [0, 2] and flags[0][1].fingerprints
    other = Signer(PREPARER, Layout(3, 3, 4), 0)
    other.handle([flags[0][1]])
    assert other.learner is not None and other.learner.boilerplate_blocks == len(flags[0][1].fingerprints)


def test_marks_of_every_input_partition_are_forwarded_as_one_release_point_and_owner_changes_withdraw():
    signer = Signer(PREPARER, LAYOUT, 1, inputs=2)
    out = signer.handle([InputMark(0, [T0 + 5, "a"])])
    marks = [records[0] for records in sent(out, Stage.BANDS).values()]
    assert len(marks) == 3 and marks[0] == BandMark(1, None, (1,))  # input partition 1 has said nothing
    out = signer.handle([InputMark(1, [T0 + 2, "b"], idle=True)])
    assert sent(out, Stage.BANDS)[0][0].mark == [T0 + 5, ""]  # up to its clock
    assert sent(signer.handle([InputMark(0, [T0 + 5, "a"])]), Stage.BANDS) == {}  # unchanged: not resent
    out = signer.handle([OwnerChange(1)])
    withdrawn = sent(out, Stage.BANDS)[0][0]  # 1 holds the point at its last mark again
    assert withdrawn.mark == [T0 + 2, ""] and withdrawn.held_back_by == (1,)
