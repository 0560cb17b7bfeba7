"""What a stage hands back: record batches for other stages and records for the output topics."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .telemetry import Tally

if TYPE_CHECKING:
    from .messages import Message

__all__ = ["Outbox", "Stage"]

Record = dict[str, Any]  # a record of an output topic, as JSON


class Stage:
    """Names of the internal stages (their topics are ``<app>-<stage>``)."""

    SITES = "sites"
    DECIDE = "decide"
    ALL = (SITES, DECIDE)


@dataclass
class Outbox:
    """Messages grouped by destination, so that the transport sends one Kafka message per partition.

    ``internal[stage][partition]`` lists messages for that stage partition, in the order they must
    be applied (the transport encodes each list as one Kafka message, :mod:`.codec`).
    ``decisions``, ``unique_pages``, ``clusters``, ``alerts``, ``answers`` and ``dead_letters``
    are (key, value) pairs for the output topics; a value of None is a tombstone. ``tally`` says what
    happened meanwhile, for the metrics (:mod:`.telemetry`); it is not sent.

    ``first`` holds messages the transport sends, and waits for, before any record of ``internal``
    (a site partition's learner flags for the others).
    """

    first: dict[str, dict[int, list[Message]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    internal: dict[str, dict[int, list[Message]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    decisions: list[tuple[str, Record]] = field(default_factory=list)
    unique_pages: list[tuple[str, bytes]] = field(default_factory=list)
    clusters: list[tuple[str, Record | None]] = field(default_factory=list)
    alerts: list[tuple[str, Record]] = field(default_factory=list)
    answers: list[tuple[str, Record]] = field(default_factory=list)
    dead_letters: list[tuple[str | None, Record]] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)

    def send(self, stage: str, partition: int, message: Message, *, first: bool = False) -> None:
        (self.first if first else self.internal)[stage][partition].append(message)

    def extend(self, other: Outbox) -> None:
        for mine, theirs in ((self.first, other.first), (self.internal, other.internal)):
            for stage, partitions in theirs.items():
                for partition, records in partitions.items():
                    mine[stage][partition].extend(records)
        self.decisions.extend(other.decisions)
        self.unique_pages.extend(other.unique_pages)
        self.clusters.extend(other.clusters)
        self.alerts.extend(other.alerts)
        self.answers.extend(other.answers)
        self.dead_letters.extend(other.dead_letters)
        self.tally.add(other.tally)

    def is_empty(self) -> bool:
        """Whether there is nothing to send (the tally is not sent)."""
        return not (
            any(self.first.values())
            or any(self.internal.values())
            or self.decisions
            or self.unique_pages
            or self.clusters
            or self.alerts
            or self.answers
            or self.dead_letters
        )
