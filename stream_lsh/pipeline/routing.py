"""Which partition of which stage a record goes to.

Stable hashes (xxh3, seed 0) rather than Python's ``hash``: every worker, on every machine and
after every restart, must send a site and a page id to the same partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import xxhash

from .outbox import Stage

__all__ = ["Layout"]


@dataclass(frozen=True)
class Layout:
    """Partition counts of the internal stages: ``sites`` site partitions (the signers, as many as
    workers may share), and one decide partition, which sees the whole window in one order.

    ``sites`` is fixed for the life of the state: sites are hashed onto it, and a learner's
    state lives with its partition. The app checks this at start-up (it is part of the guard).
    """

    sites: int = 8
    decide: int = 1  # one: the window is decided in one place, in one order

    def __post_init__(self) -> None:
        if not isinstance(self.sites, int) or isinstance(self.sites, bool) or self.sites < 1:
            raise ValueError(f"site partitions must be a positive integer, got {self.sites!r}")
        if self.decide != 1:
            raise ValueError(f"there is one decide partition, got {self.decide!r}")

    def partitions(self, stage: str) -> int:
        """Partition count of a stage (``Stage.SITES`` or ``Stage.DECIDE``)."""
        return {Stage.SITES: self.sites, Stage.DECIDE: self.decide}[stage]

    def site(self, site: str) -> int:
        return xxhash.xxh3_64_intdigest(site.encode("utf-8", "surrogatepass")) % self.sites

    def retraction_site(self, page_id: str) -> int:
        """The site partition that passes a page's retraction on to the decide partition (any one
        would do: it goes in order with that partition's pages and before its release point)."""
        return xxhash.xxh3_64_intdigest(page_id.encode("utf-8", "surrogatepass"), seed=1) % self.sites
