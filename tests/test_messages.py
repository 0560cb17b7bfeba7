"""The typed stage messages, their wire form, and the codec the transport uses
(stream_lsh.pipeline.messages, stream_lsh.pipeline.codec)."""

import orjson
import pytest

from stream_lsh.errors import ProtocolError, StreamLshError
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.candidates import Candidate, Exact
from stream_lsh.pipeline.messages import (
    AnswerVia,
    Ask,
    BandAnswer,
    BandClock,
    BandMark,
    Flags,
    Frontier,
    InputMark,
    Join,
    Leave,
    OwnerChange,
    PageToSign,
    Probe,
    Registration,
    Retraction,
    RetractionAtHome,
    Standing,
    Tell,
)
from stream_lsh.pipeline.outbox import Stage

T0 = 1_772_323_200_000
BY_STAGE = {
    Stage.SITES: [
        PageToSign("p1", False, "a.example", "en", T0, T0 / 1000, None, 42, ("one", "two"), '{"id": "p1"}'),
        PageToSign("q1", True, "a.example", None, T0, None, "2999-01-01", 1, ()),
        Flags((1, 2, 3), "a.example"),
        Flags((4,), None),
        InputMark(0, [T0, "p1"]),
        InputMark(1, None, idle=True),
        OwnerChange(2),
    ],
    Stage.BANDS: [
        Probe("p1", False, 3, T0, 1_772_323_100.5, 42, "AQAAAA==", ((0, 7), (5, 9)), 11),
        Probe("q1", True, 0, 5, None, 1, None, (), None),
        Retraction("p1", T0 + 100_000, 3, 2),
        BandMark(4, [T0, "p1"], (0, 2)),
        BandMark(1, None),
    ],
    Stage.HOMES: [
        Registration("p1", False, T0, T0 / 1000, None, 42, (0, 1, 2), False, '{"id": "p1"}'),
        Registration("q1", True, T0, None, "bad date", 1, (0,), True),
        Registration("p2", False, T0, T0 / 1000, None, 7, (0,), False, "{}", T0 - 5, "a.example"),
        BandAnswer("p1", False, 2, 10, 42, 9, Exact("p0", 1, 100.0), (Candidate("p0", 0.8, 3, 0, 1, 100.0),)),
        BandAnswer("q1", True, 0, 10, 1, None, None, ()),
        Ask("p0", "p1", 3, False, 10, 42, 0.8, 2, 9),
        Ask("p0", "p1", 3, True, 10, 42, 0.8),
        Tell("p1", 10, 42, False, "p0", Standing.DECIDED, "p0", 1),
        Tell("p1", 10, 42, True, "p0", Standing.GONE),
        Join("p0", "p1", 100.0),
        Join("p0", "p2", 100.0, T0, "a.example"),
        Leave("p0", "p1"),
        Leave("p0", "p2", T0 + 7),
        RetractionAtHome("p1", T0 + 100_000),
        BandClock(2, T0 + 5, "p1"),
        Frontier(1, T0 + 4, "p0\x00"),
        AnswerVia("p0", {"correlation_id": "q1", "status": "duplicate", "cluster_id": "p0"}),
    ],
}
EXAMPLES = [(stage, message) for stage, messages in BY_STAGE.items() for message in messages]


@pytest.mark.parametrize(("stage", "message"), EXAMPLES, ids=lambda m: getattr(type(m), "__name__", m))
def test_every_message_survives_its_wire_form_as_json(stage, message):
    wire = orjson.loads(orjson.dumps(message.to_wire()))
    assert wire["k"] == message.KIND
    assert type(message).from_wire(wire) == message


@pytest.mark.parametrize("stage", Stage.ALL)
def test_a_batch_decodes_to_the_messages_encoded_for_that_stage(stage):
    assert codec.decode(stage, codec.encode(BY_STAGE[stage])) == BY_STAGE[stage]


def test_kinds_are_read_per_stage_one_name_two_meanings():
    """``delete`` is a Retraction to a band partition and a RetractionAtHome to a home."""
    data = codec.encode([Retraction("p1", T0, 3, 2)])
    assert type(codec.decode(Stage.BANDS, data)[0]) is Retraction
    assert codec.decode(Stage.HOMES, data) == [RetractionAtHome("p1", T0)]


def test_a_journal_segment_holds_batches_as_they_were_received():
    batches = [
        codec.encode(BY_STAGE[Stage.HOMES][:2]),
        codec.encode([]),
        codec.encode(BY_STAGE[Stage.HOMES][2:]),
    ]
    (segment,) = codec.segments(batches, 1 << 20)
    assert codec.decode_segment(Stage.HOMES, segment) == (
        [BY_STAGE[Stage.HOMES][:2], [], BY_STAGE[Stage.HOMES][2:]],
        None,
    )


def test_only_the_last_segment_of_a_micro_batch_names_the_input_offset_it_covers():
    """A journal cut after the first segments of a micro-batch must not claim to cover it."""
    batches = [codec.encode(BY_STAGE[Stage.HOMES][:2]), codec.encode(BY_STAGE[Stage.HOMES][2:])]
    first, last = codec.segments(batches, 1, upto=41)  # one batch a segment
    assert codec.decode_segment(Stage.HOMES, first) == ([BY_STAGE[Stage.HOMES][:2]], None)
    assert codec.decode_segment(Stage.HOMES, last) == ([BY_STAGE[Stage.HOMES][2:]], 41)


@pytest.mark.parametrize(
    ("stage", "data", "says"),
    [
        (
            Stage.BANDS,
            codec.encode([Tell("p1", 1, 2, False, "p0", Standing.LATER)]),
            "band partition got a record of kind 'tell'",
        ),
        (
            Stage.SITES,
            codec.encode([Probe("q1", True, 0, 5, None, 1, None, (), None)]),
            "site partition got a record of kind 'probe'",
        ),
        (
            Stage.HOMES,
            b'[{"k": "join", "cl": "c"}]',
            "home partition got a 'join' record it cannot read .*KeyError",
        ),
        (
            Stage.HOMES,
            codec.encode([Tell("p1", 1, 2, False, "p0", Standing.LATER)]).replace(b'"later"', b'"maybe"'),
            "'tell' record it cannot read .*'maybe'",
        ),
        (Stage.HOMES, b"[1]", "home partition got a record of kind 1"),
        (Stage.HOMES, b'{"k": "join"}', "got dict, not a batch"),
        (Stage.BANDS, b"\x00not json", "not JSON"),
    ],
)
def test_a_record_its_stage_cannot_read_is_a_protocol_error_that_says_why(stage, data, says):
    with pytest.raises(ProtocolError, match=says) as raised:
        codec.decode(stage, data)
    assert isinstance(raised.value, StreamLshError)
