"""How large a record the stages may hand to Kafka, and what follows from it.

A broker refuses a record batch over its topic's ``max.message.bytes`` (1 MiB on Apache Kafka, MSK,
Redpanda and Event Hubs unless raised), and aiokafka refuses one over the producer's
``max_request_size`` before sending it; either way, a send that fails ends the worker and the batch
that caused it comes again: a poison pill. So nothing the stages write may exceed the limit:

* a micro-batch for one stage partition is split into records that each fit (:func:`.codec.encode`,
  :meth:`RecordLimit.batch_bytes`); handling a batch in parts leaves a stage in the same state, which
  the journal relies on already;
* a journal row holds at most one such record (:mod:`.journal`), and snapshot chunks are smaller;
* a page whose record to its site partition would not fit is a ``too_large`` dead letter at the
  input (:meth:`RecordLimit.page_fits`). That record is the largest any page causes: its
  registration at its home and its copy on the unique-pages topic carry the same raw page with less
  around it.

Sizes are counted before compression, as the producer counts them: a limit that holds uncompressed
holds whatever the codec.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RecordLimit"]

#: Bytes a record batch takes beyond its values: the batch header (61), each record's framing and
#: key (a page id or a journal key), headers. Generous, so that a value that fits is never refused.
BATCH_OVERHEAD = 4096

#: Room a page's site record leaves for what differs in the records it causes: its registration
#: names the band partitions that will answer, its unique-pages record is keyed by its id.
PAGE_SLACK = 4096


@dataclass(frozen=True)
class RecordLimit:
    """The largest record batch the broker takes (``max.message.bytes``), and the sizes it allows."""

    max_message_bytes: int

    def __post_init__(self) -> None:
        if self.max_message_bytes <= BATCH_OVERHEAD + PAGE_SLACK:
            raise ValueError(
                f"max_message_bytes must exceed {BATCH_OVERHEAD + PAGE_SLACK}, got {self.max_message_bytes}"
            )

    @property
    def batch_bytes(self) -> int:
        """Largest value of one record of a stage topic (or of a journal row holding one)."""
        return self.max_message_bytes - BATCH_OVERHEAD

    @property
    def page_bytes(self) -> int:
        """Largest wire form of a page's record to its site partition."""
        return self.batch_bytes - PAGE_SLACK

    def page_fits(self, wire_bytes: int) -> bool:
        return wire_bytes <= self.page_bytes
