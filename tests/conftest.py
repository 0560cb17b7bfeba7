"""Shared test helpers: deterministic English-like prose with a realistic share of stop words."""

from __future__ import annotations

import os
import random

import pytest

from stream_lsh.stream.brokers import BROKER_KINDS, embedded_broker

STOP = (
    "the of and to a in that is for it with as was on be at by this from or an are his her "
    "they we you not but have has had were which their its been would will there who"
).split()


def prose(seed: int, words: int) -> str:
    """Sentences of pseudo-words, ~45% of them English stop words; the same seed, the same text."""
    rng = random.Random(seed)
    out, sentence = [], []
    for _ in range(words):
        if rng.random() < 0.45:
            sentence.append(rng.choice(STOP))
        else:
            sentence.append(
                "".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))
            )
        if len(sentence) >= rng.randint(10, 22):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return "\n".join(" ".join(out[i : i + 3]) for i in range(0, len(out), 3))


@pytest.fixture
def make_prose():
    return prose


def _test_brokers() -> list[str]:
    """STREAM_LSH_TEST_BROKERS=tansu,kafka (the default) picks the brokers the end-to-end tests run
    on; `tansu` alone runs the suite on a machine without Java."""
    kinds = [
        k.strip()
        for k in os.environ.get("STREAM_LSH_TEST_BROKERS", ",".join(BROKER_KINDS)).split(",")
        if k.strip()
    ]
    unknown = sorted(set(kinds) - set(BROKER_KINDS))
    if unknown or not kinds:
        raise pytest.UsageError(
            f"STREAM_LSH_TEST_BROKERS: {', '.join(unknown) or 'empty'}; choose from {', '.join(BROKER_KINDS)}"
        )
    return kinds


TEST_BROKERS = _test_brokers()


def _started(kind: str):
    """A started broker of ``kind``, stopped and cleaned up after; a Kafka broker that cannot start
    (no Java, no Maven to fetch it) fails the test with the reason, it is never skipped quietly."""
    embedded = embedded_broker(kind).start()
    try:
        yield embedded
    finally:
        embedded.stop()
        embedded.cleanup()


@pytest.fixture(scope="module", params=TEST_BROKERS)
def broker(request):
    """A real broker process on free ports: every end-to-end test that takes it runs on Tansu
    (embedded, no Java; one per test module) and on Apache Kafka (single-node KRaft; one per
    session, as it takes seconds to start). Each test has its own app id, so its own topics."""
    if request.param == "kafka":
        yield request.getfixturevalue("kafka_broker")
    else:
        yield from _started(request.param)


@pytest.fixture(scope="module")
def tansu_broker():
    """Tansu only: for tests of what does not depend on the broker, or of Tansu itself. One per
    module: its memory engine grows slower as topics pile up."""
    yield from _started("tansu")


@pytest.fixture(scope="session")
def kafka_broker():
    """Apache Kafka only: for what Tansu cannot do (transactions, compaction, a restart that keeps data)."""
    if "kafka" not in TEST_BROKERS:
        pytest.skip("STREAM_LSH_TEST_BROKERS leaves Apache Kafka out")
    yield from _started("kafka")


def entry_written_with(raw: bytes, fields: int) -> bytes:
    """An encoded window entry as a version that wrote only its first ``fields`` head fields
    wrote it (stream_lsh.stores.entry_codec): for the reading of older layouts."""
    import orjson

    from stream_lsh.stores.entry_codec import _HEAD

    (size,) = _HEAD.unpack_from(raw)
    head = orjson.loads(raw[_HEAD.size : _HEAD.size + size])
    older_head = orjson.dumps(head[:fields])
    return _HEAD.pack(len(older_head)) + older_head + raw[_HEAD.size + size :]
