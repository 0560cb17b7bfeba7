"""The typed stage messages, their wire form, and the codec the transport uses
(stream_lsh.pipeline.messages, stream_lsh.pipeline.codec)."""

import orjson
import pytest

from stream_lsh.errors import ProtocolError, StreamLshError
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.messages import (
    InputMark,
    OwnerChange,
    PageToSign,
    ReleaseMark,
    Retraction,
    SignedForDecision,
)
from stream_lsh.pipeline.outbox import Stage

T0 = 1_772_323_200_000
BY_STAGE = {
    Stage.SITES: [
        PageToSign("p1", False, "a.example", "en", T0, T0 / 1000, None, 42, ("one", "two"), '{"id": "p1"}'),
        PageToSign("q1", True, "a.example", None, T0, None, "2999-01-01", 1, ()),
        PageToSign("f1", False, "a.example", "en", T0, None, None, 3, ("a",), listing=True),
        PageToSign("t2", False, "a.example", "en", T0, None, None, 3, ("a",), headline=9, part=True),
        PageToSign("a3", False, "a.example", "en", T0, None, None, 3, ("a",), address=123_456),
        PageToSign(
            "w4",
            False,
            "a.example",
            "en",
            T0,
            None,
            None,
            3,
            ("a", "b"),
            names=((1, 2), ()),
            slots=((), (7 << 16 | 9,)),
        ),
        Retraction("p1", T0 + 100_000),
        InputMark(0, [T0, "p1"]),
        InputMark(1, None, idle=True),
        InputMark(3, [T0, "p9"], idle=True, generation=7),
        InputMark(2, [T0, "p4"], idle=True, generation=2, taken=41, ends=((0, 12), (3, 40))),
        OwnerChange(2),
        OwnerChange(0, before=7),
    ],
    Stage.DECIDE: [
        SignedForDecision(
            "p1",
            False,
            T0,
            1_772_323_100.5,
            None,
            42,
            11,
            "AQAAAA==",
            "AQAAAAAAAAA=",
            None,
            '{"id": "p1"}',
            "a.example",
            T0 - 5,
        ),
        SignedForDecision("q1", True, 5, None, "bad date", 1, 2, None, None),
        SignedForDecision("n1", False, T0, None, None, 7, 8, None, None, notice="not_found"),
        SignedForDecision("f1", False, T0, None, None, 9, 10, "AQAAAA==", "AQAAAAAAAAA=", listing=True),
        SignedForDecision("h1", False, T0, None, None, 9, 10, None, None, headline=5, site_headline=6),
        SignedForDecision(
            "s1", False, T0, None, None, 9, 10, "AQAAAA==", "AQAAAAAAAAA=", listing=True, site_key=7
        ),
        SignedForDecision(
            "t2", False, T0, None, None, 9, 10, "AQAAAA==", "AQAAAAAAAAA=", headline=5, part=True
        ),
        SignedForDecision(
            "w4",
            False,
            T0,
            None,
            None,
            9,
            10,
            "AQAAAA==",
            "AQAAAAAAAAA=",
            names="AQAAAA==",
            name_count=1,
            slots="CQAHAA==",
        ),
        Retraction("p1", T0 + 100_000),
        ReleaseMark(4, [T0, "p1"], (0, 2)),
        ReleaseMark(1, None),
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
    """``wm`` is an input partition's mark to a site partition and a site partition's release point
    to the decide partition."""
    data = codec.encode([InputMark(3, [T0, "p1"])])
    assert codec.decode(Stage.SITES, data) == [InputMark(3, [T0, "p1"])]
    assert codec.decode(Stage.DECIDE, data) == [ReleaseMark(3, [T0, "p1"])]


def test_a_journal_segment_holds_batches_as_they_were_received():
    batches = [
        codec.encode(BY_STAGE[Stage.DECIDE][:2]),
        codec.encode([]),
        codec.encode(BY_STAGE[Stage.DECIDE][2:]),
    ]
    (segment,) = codec.segments(batches, 1 << 20)
    assert codec.decode_segment(Stage.DECIDE, segment) == (
        [BY_STAGE[Stage.DECIDE][:2], [], BY_STAGE[Stage.DECIDE][2:]],
        None,
    )


def test_only_the_last_segment_of_a_micro_batch_names_the_input_offset_it_covers():
    """A journal cut after the first segments of a micro-batch must not claim to cover it."""
    batches = [codec.encode(BY_STAGE[Stage.DECIDE][:2]), codec.encode(BY_STAGE[Stage.DECIDE][2:])]
    first, last = codec.segments(batches, 1, upto=41)  # one batch a segment
    assert codec.decode_segment(Stage.DECIDE, first) == ([BY_STAGE[Stage.DECIDE][:2]], None)
    assert codec.decode_segment(Stage.DECIDE, last) == ([BY_STAGE[Stage.DECIDE][2:]], 41)


@pytest.mark.parametrize(
    ("stage", "data", "says"),
    [
        (
            Stage.DECIDE,
            codec.encode([OwnerChange(1)]),
            "decide partition got a record of kind 'owner'",
        ),
        (
            Stage.SITES,
            codec.encode([BY_STAGE[Stage.DECIDE][0]]),
            "site partition got a record of kind 'signed'",
        ),
        (
            Stage.DECIDE,
            b'[{"k": "signed", "id": "c"}]',
            "decide partition got a 'signed' record it cannot read .*KeyError",
        ),
        (Stage.DECIDE, b"[1]", "decide partition got a record of kind 1"),
        (Stage.DECIDE, b'{"k": "wm"}', "got dict, not a batch"),
        (Stage.DECIDE, b"\x00not json", "not JSON"),
    ],
)
def test_a_record_its_stage_cannot_read_is_a_protocol_error_that_says_why(stage, data, says):
    with pytest.raises(ProtocolError, match=says) as raised:
        codec.decode(stage, data)
    assert isinstance(raised.value, StreamLshError)
