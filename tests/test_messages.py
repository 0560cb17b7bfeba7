"""The typed stage messages and their wire form (stream_lsh.pipeline.messages)."""

import orjson
import pytest

from stream_lsh.pipeline.candidates import Candidate
from stream_lsh.pipeline.messages import Ask, BandAnswer, BandMark, Probe, Retraction, band_message

EXAMPLES = [
    Probe("p1", False, 3, 1_772_323_200_000, 1_772_323_100.5, 42, "AQAAAA==", ((0, 7), (5, 9)), 11),
    Probe("q1", True, 0, 5, None, 1, None, (), None),
    Retraction("p1", 1_772_323_300_000, 3, 2),
    BandMark(4, [1_772_323_200_000, "p1"], (0, 2)),
    BandMark(1, None),
    BandAnswer("p1", False, 2, 10, 42, 9, ("p0", 1, 100.0), (Candidate("p0", 0.8, 3, 0, 1, 100.0),)),
    BandAnswer("q1", True, 0, 10, 1, None, None, ()),
    Ask("p0", "p1", 3, False, 10, 42, 0.8, 2, 9),
    Ask("p0", "p1", 3, True, 10, 42, 0.8),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: type(m).__name__)
def test_every_message_survives_its_wire_form_as_json(message):
    wire = orjson.loads(orjson.dumps(message.to_wire()))
    assert wire["k"] == message.KIND
    assert type(message).from_wire(wire) == message


def test_band_records_decode_to_their_types_and_others_are_refused():
    assert band_message(EXAMPLES[0].to_wire()) == EXAMPLES[0]
    assert band_message(EXAMPLES[2].to_wire()) == EXAMPLES[2]
    with pytest.raises(ValueError, match="kind 'res'"):
        band_message(EXAMPLES[5].to_wire())
