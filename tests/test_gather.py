"""The home stage on its own: a Gather fed typed messages (stream_lsh.pipeline.messages), read
through what it sends and outputs. End-to-end behaviour is in test_pipeline.py; here each rule of
the home partition (wait for every band, settle races by (clock, id), batch's decision, clusters
at their home) is pinned down by itself."""

from stream_lsh.core.verification import Verification
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.candidates import Candidate, Exact
from stream_lsh.pipeline.gather import Gather
from stream_lsh.pipeline.messages import (
    Ask,
    BandAnswer,
    Join,
    Leave,
    Message,
    Registration,
    RetractionAtHome,
    Standing,
    Tell,
)
from stream_lsh.pipeline.outbox import Outbox, Stage
from stream_lsh.pipeline.routing import Layout

T0 = 1_772_323_200_000
BANDS = (0, 1)  # every delivery is answered by both band partitions


def home(partition: int = 0, **kw) -> Gather:
    return Gather(partition, Layout(1, len(BANDS), 2), rule=Verification(0.5), ttl=kw.pop("ttl", None), **kw)


def register(page_id: str, clock: int, *, body: int = 7, query: bool = False) -> Registration:
    return Registration(
        page_id, query, clock, clock / 1000, None, body, BANDS, False, None if query else "{}"
    )


def answer(page_id, clock, band, *candidates, body=7, query=False, exact=None, band_clock=None) -> BandAnswer:
    return BandAnswer(page_id, query, band, clock, body, band_clock, exact, tuple(candidates))


def candidate(
    page_id: str, similarity: float, *, band: int = 0, position: int = 0, home: int = 1
) -> Candidate:
    return Candidate(page_id, similarity, band, position, home, None)


def sent(out: Outbox, partition: int) -> list[Message]:
    return list(out.internal[Stage.HOMES].get(partition, ()))


def decided(out: Outbox) -> dict[str, dict]:
    return dict(out.decisions)


def test_a_page_waits_for_every_band_partition_then_founds_its_cluster():
    gather = home()
    assert gather.handle([register("a", T0), answer("a", T0, 0)]).decisions == []
    out = gather.handle([answer("a", T0, 1)])
    assert decided(out)["a"]["status"] == "unique" and decided(out)["a"]["cluster_id"] == "a"
    assert [key for key, _ in out.unique_pages] == ["a"]
    assert out.clusters == [
        ("a", {"cluster_id": "a", "first": "a", "size": 1, "members": ["a"], "updated_at": T0 / 1000})
    ]


def test_a_verified_candidate_is_waited_for_and_its_cluster_joined_at_the_cluster_home():
    gather = home()
    out = gather.handle(
        [register("b", T0 + 5), answer("b", T0 + 5, 0, candidate("x", 0.8)), answer("b", T0 + 5, 1)]
    )
    assert out.decisions == [], "x's home has not said whether x is earlier"
    out = gather.handle([Tell("b", T0 + 5, 7, False, "x", Standing.DECIDED, "x", 1)])
    decision = decided(out)["b"]
    assert (decision["status"], decision["cluster_id"], decision["duplicate_of"]) == ("duplicate", "x", "x")
    assert sent(out, 1) == [Join("x", "b", (T0 + 5) / 1000, T0 + 5)] and out.clusters == []


def test_a_candidate_said_to_be_later_or_gone_is_ignored():
    for standing in (Standing.LATER, Standing.GONE):
        gather = home()
        gather.handle([register("b", T0), answer("b", T0, 0, candidate("x", 0.9)), answer("b", T0, 1)])
        out = gather.handle([Tell("b", T0, 7, False, "x", standing)])
        assert decided(out)["b"]["status"] == "unique", standing


def test_below_the_threshold_a_candidate_is_not_waited_for():
    gather = home()
    out = gather.handle([register("b", T0), answer("b", T0, 0, candidate("x", 0.3)), answer("b", T0, 1)])
    assert decided(out)["b"]["status"] == "unique" and decided(out)["b"]["candidates"] == 1


def test_the_exact_copy_wins_over_a_more_similar_candidate_and_ties_go_to_the_first_met():
    gather = home()
    gather.handle(
        [
            register("c", T0),
            answer("c", T0, 0, candidate("far", 0.9, band=3), candidate("near", 0.9, band=1)),
            answer("c", T0, 1, exact=Exact("same", 1, None)),
        ]
    )
    tells = [Tell("c", T0, 7, False, page, Standing.DECIDED, page, 1) for page in ("far", "near", "same")]
    assert decided(gather.handle(tells))["c"]["duplicate_of"] == "same"
    gather = home()
    gather.handle(
        [
            register("c", T0),
            answer("c", T0, 0, candidate("far", 0.9, band=3)),
            answer("c", T0, 1, candidate("near", 0.9, band=1)),
        ]
    )
    assert decided(gather.handle(tells[:2]))["c"]["duplicate_of"] == "near"


def test_an_ask_from_a_later_page_waits_for_the_decision_then_is_told():
    gather = home()
    gather.handle([register("a", T0)])
    ask = Ask("a", "later", 1, False, T0 + 9, 5, 0.8, band_partition=0, band_clock=T0 + 9)
    assert sent(gather.handle([ask, ask]), 1) == [], "a is in flight: the asker waits"
    out = gather.handle([answer("a", T0, 0), answer("a", T0, 1)])
    assert sent(out, 1) == [Tell("later", T0 + 9, 5, False, "a", Standing.DECIDED, "a", 0)], "told once"


def test_an_ask_from_an_earlier_page_is_told_later_and_the_page_waits_for_the_asker():
    """The race: the earlier page met this one first. This one must wait for it, whichever band
    partition saw whom first, so it asks the earlier page's home itself (a link)."""
    gather = home()
    gather.handle([register("late", T0 + 9)])
    out = gather.handle([Ask("late", "early", 1, False, T0 + 1, 5, 0.8, 0, T0 + 1)])
    assert sent(out, 1) == [Tell("early", T0 + 1, 5, False, "late", Standing.LATER)]
    out = gather.handle([answer("late", T0 + 9, 0), answer("late", T0 + 9, 1)])
    assert out.decisions == [] and sent(out, 1) == [
        Ask("early", "late", 0, False, T0 + 9, 7, 0.8, containment=0.8)
    ]
    out = gather.handle([Tell("late", T0 + 9, 7, False, "early", Standing.DECIDED, "early", 1)])
    assert decided(out)["late"]["duplicate_of"] == "early"


def test_a_repeated_delivery_gets_the_decision_again_and_the_page_is_output_once():
    gather = home()
    out = gather.handle([register("a", T0), register("a", T0), answer("a", T0, 0), answer("a", T0, 1)])
    assert [key for key, _ in out.decisions] == ["a", "a"] and len(out.unique_pages) == 1


def test_a_query_gets_an_answer_and_is_never_indexed_nor_asked_about():
    gather = home()
    out = gather.handle(
        [register("q", T0, query=True), answer("q", T0, 0, query=True), answer("q", T0, 1, query=True)]
    )
    assert out.decisions == [] and out.answers[0][1]["correlation_id"] == "q" and not gather.done
    told = gather.handle([Ask("q", "p", 1, False, T0 + 1, 5, 0.9)])
    assert sent(told, 1) == [Tell("p", T0 + 1, 5, False, "q", Standing.GONE)]


def test_a_retraction_makes_the_page_leave_its_cluster_and_the_last_member_tombstones_it():
    gather = home()
    gather.handle([register("a", T0), answer("a", T0, 0), answer("a", T0, 1)])
    out = gather.handle([RetractionAtHome("a", T0 + 1)])
    assert out.clusters == [("a", None)] and "a" not in gather.done
    assert gather.handle([Leave("a", "a")]).clusters == [], "a repeated leave changes nothing"


def test_a_snapshot_mid_flight_restores_to_the_same_behaviour():
    gather = home()
    gather.handle(
        [
            register("a", T0),
            answer("a", T0, 0),
            register("b", T0 + 5),
            answer("b", T0 + 5, 0, candidate("a", 0.9, home=0)),
            Ask("a", "b", 0, False, T0 + 5, 7, 0.9, 0, T0),
        ]
    )
    restored = home()
    restored.restore(codec.load_state(codec.dump_state(gather.snapshot())))
    rest = [answer("a", T0, 1), answer("b", T0 + 5, 1)]
    out = restored.handle(rest)
    assert out == gather.handle(rest) and decided(out)["b"]["duplicate_of"] == "a"
    assert codec.dump_state(restored.snapshot()) == codec.dump_state(gather.snapshot())


def test_the_guard_names_the_band_partitions_a_page_waits_for():
    now = [100.0]
    gather = home(clock=lambda: now[0])
    gather.handle([register("a", T0), answer("a", T0, 0)])
    now[0] += 60
    [wait] = gather.stalled(30.0)
    assert wait.page_id == "a" and "band partitions 1 to answer" in wait.waits_for
    assert gather.stalled(30.0) == [], "reported once"
