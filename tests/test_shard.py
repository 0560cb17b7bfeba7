"""The band stage on its own: a Shard fed typed messages (stream_lsh.pipeline.messages), read
through what it sends. End-to-end behaviour is in test_pipeline.py; here each rule of the band
partition is pinned down by itself."""

import base64

import numpy as np

from stream_lsh.core.verification import Verification
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.candidates import Candidate
from stream_lsh.pipeline.messages import (
    Ask,
    BandAnswer,
    BandMark,
    Message,
    Probe,
    Retraction,
    RetractionAtHome,
)
from stream_lsh.pipeline.outbox import Outbox, Stage
from stream_lsh.pipeline.shard import Shard

HOUR_MS = 3_600_000
T0 = 1_772_323_200_000  # 2026-03-01T00:00:00Z, a clock in ms


def signature(*values: int) -> str:
    return base64.b64encode(np.array(values, dtype="<u4").tobytes()).decode("ascii")


def probe(
    page_id, clock, keys, sig=(1, 2, 3, 4), *, home=0, query=False, body=7, content_hash=None, event_time=None
):
    return Probe(
        page_id,
        query,
        home,
        clock,
        (clock / 1000 if event_time is None else event_time),
        body,
        signature(*sig),
        tuple(keys),
        content_hash,
    )


def sent(out: Outbox, stage=Stage.HOMES) -> list[Message]:
    return [record for records in out.internal[stage].values() for record in records]


def answers(out: Outbox) -> list[BandAnswer]:
    return [m for m in sent(out) if isinstance(m, BandAnswer)]


def asks(out: Outbox) -> list[Ask]:
    return [m for m in sent(out) if isinstance(m, Ask)]


def shard(**kw) -> Shard:
    return Shard(3, bucket_cap=kw.pop("bucket_cap", 8), ttl=kw.pop("ttl", None), rule=Verification(0.5), **kw)


def test_a_probe_finds_earlier_pages_verified_with_where_they_were_met_and_asks_their_homes():
    band = shard()
    band.handle([probe("a", T0, [(0, 11), (1, 22)], (1, 2, 3, 4), home=5)])
    out = band.handle([probe("b", T0 + 1, [(1, 22)], (1, 2, 3, 9), home=6)])
    (answer,) = answers(out)
    assert answer.id == "b" and answer.band_partition == 3 and answer.band_clock == T0 + 1
    # b's one differing row is higher than a's: that minimum lies in a alone, so b is contained in a
    assert answer.candidates == (Candidate("a", 0.75, 1, 0, 5, T0 / 1000, 1.0),)
    assert asks(out) == [Ask("a", "b", 6, False, T0 + 1, 7, 0.75, 3, T0 + 1, 1.0)]
    assert [type(m) for m in out.internal[Stage.HOMES][6]] == [BandAnswer]  # the answer goes to b's home


def test_candidates_below_the_threshold_are_reported_but_nobody_is_asked_about_them():
    band = shard()
    band.handle([probe("a", T0, [(0, 11)], (1, 2, 3, 4))])
    out = band.handle([probe("b", T0 + 1, [(0, 11)], (1, 9, 9, 9))])
    assert answers(out)[0].candidates[0].similarity == 0.25 and asks(out) == []


def test_a_redelivery_is_answered_again_and_changes_nothing_a_new_body_replaces_the_page():
    band = shard()
    band.handle([probe("a", T0, [(0, 11)])])
    again = band.handle([probe("a", T0 + 5, [(0, 11)])])
    assert answers(again)[0].candidates == () and band.window.buckets == {11: ["a"]}
    band.handle([probe("a", T0 + 9, [(0, 33)], body=8)])
    assert band.window.buckets == {33: ["a"]} and band.entries["a"].body_hash == 8


def test_a_query_is_answered_and_never_indexed():
    band = shard()
    band.handle([probe("a", T0, [(0, 11)])])
    out = band.handle([probe("q", T0 + 1, [(0, 11)], query=True)])
    assert [c.id for c in answers(out)[0].candidates] == ["a"] and "q" not in band.entries


def test_the_exact_copy_is_answered_by_the_partition_owning_the_content_hash():
    band = shard()
    band.handle([probe("a", T0, [], content_hash=99, home=4)])
    out = band.handle([probe("b", T0 + 1, [], content_hash=99, home=2)])
    assert answers(out)[0].exact == ("a", 4, T0 / 1000)
    assert asks(out) == [Ask("a", "b", 2, False, T0 + 1, 7, 1.0, 3, T0 + 1, 1.0)]


def test_pages_leave_when_the_clock_passes_their_event_time_plus_the_window():
    band = shard(ttl=3600.0)
    band.handle([probe("old", T0, [(0, 11)])])
    out = band.handle([probe("new", T0 + 2 * HOUR_MS, [(0, 11)])])
    assert answers(out)[0].candidates == () and set(band.entries) == {"new"}


def test_a_retraction_removes_the_page_and_the_telling_partition_passes_it_home():
    band = shard()
    band.handle([probe("a", T0, [(0, 11)])])
    out = band.handle([Retraction("a", T0 + 1, home=5, tell=3)])
    assert "a" not in band.entries and out.internal[Stage.HOMES][5] == [RetractionAtHome("a", T0 + 1)]
    silent = shard()
    silent.handle([probe("a", T0, [(0, 11)])])
    assert sent(silent.handle([Retraction("a", T0 + 1, home=5, tell=0)])) == []


def test_with_watermarks_probes_wait_for_every_site_partition_and_apply_in_clock_order():
    band = shard(sources=2)
    out = band.handle([probe("late", T0 + 2, [(0, 11)]), probe("early", T0 + 1, [(0, 11)])])
    assert sent(out) == [] and len(band.held) == 2
    assert sent(band.handle([BandMark(0, [T0 + 5, "~"])])) == []  # site partition 1 has not spoken
    out = band.handle([BandMark(1, [T0 + 5, "~"])])
    assert [a.id for a in answers(out)] == ["early", "late"] and band.held == []
    assert [c.id for c in answers(out)[1].candidates] == ["early"]


def test_held_probes_survive_a_snapshot_as_bytes():
    band = shard(sources=1)
    band.handle([probe("a", T0, [(0, 11)]), probe("b", T0 + 1, [(0, 11)], (1, 2, 3, 9))])
    restored = shard(sources=1)
    restored.restore(codec.load_state(codec.dump_state(band.snapshot())))
    mark = BandMark(0, [T0 + 5, "~"])
    assert sent(restored.handle([mark])) == sent(band.handle([mark]))
