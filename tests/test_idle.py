"""QuietInputs: when a worker declares its input partitions idle (event-time order)."""

from __future__ import annotations

from stream_lsh.stream.idle import QuietInputs


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_partition_is_declared_once_per_quiet_spell():
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    assert quiet.newly_idle({0, 1}) == []  # just assigned: the spell starts now
    clock.now += 0.1
    quiet.heard({0})
    clock.now += 0.15
    assert quiet.newly_idle({0, 1}) == [1]
    assert quiet.newly_idle({0, 1}) == []  # already declared
    clock.now += 0.1
    assert quiet.newly_idle({0, 1}) == [0]
    quiet.heard({1})  # pages again: a new spell
    clock.now += 0.2
    assert quiet.newly_idle({0, 1}) == [1]


def test_only_assigned_partitions_are_declared_and_a_rebalance_starts_over():
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    quiet.newly_idle({0})
    clock.now += 1
    assert quiet.newly_idle({0}) == [0]
    quiet.forget()
    assert quiet.newly_idle({0, 3}) == []
    clock.now += 0.2
    assert quiet.newly_idle({0, 3}) == [0, 3]


def test_a_partition_whose_mark_said_it_is_caught_up_is_not_declared_again():
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    quiet.newly_idle({0, 1})
    quiet.heard({0, 1}, caught_up={0})  # partition 0's mark said "idle after me"
    clock.now += 0.3
    assert quiet.newly_idle({0, 1}) == [1]
    quiet.heard({0})  # 0 has pages again and is not caught up: the timer watches it again
    clock.now += 0.3
    assert quiet.newly_idle({0, 1}) == [0]
