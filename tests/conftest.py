"""Shared test helpers: deterministic English-like prose with a realistic share of stop words."""

from __future__ import annotations

import random

import pytest

from stream_lsh.stream.broker import EmbeddedBroker

STOP = ("the of and to a in that is for it with as was on be at by this from or an are his her "
        "they we you not but have has had were which their its been would will there who").split()


def prose(seed: int, words: int) -> str:
    """Sentences of pseudo-words, ~45% of them English stop words; the same seed, the same text."""
    rng = random.Random(seed)
    out, sentence = [], []
    for _ in range(words):
        if rng.random() < 0.45:
            sentence.append(rng.choice(STOP))
        else:
            sentence.append("".join(rng.choice("bcdfgklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4))))
        if len(sentence) >= rng.randint(10, 22):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return "\n".join(" ".join(out[i:i + 3]) for i in range(0, len(out), 3))


@pytest.fixture
def make_prose():
    return prose


@pytest.fixture(scope="module")
def broker():
    """A real broker process (embedded Tansu) on a free port, one per test module."""
    embedded = EmbeddedBroker()
    embedded.start()
    yield embedded
    embedded.stop()
