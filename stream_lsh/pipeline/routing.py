"""Which partition of which stage a record goes to.

Stable hashes (xxh3, seed 0) rather than Python's ``hash``: every worker, on every machine and
after every restart, must send a site, a band key and a page id to the same partition.
"""

from __future__ import annotations

from dataclasses import dataclass

import xxhash

__all__ = ["Layout"]


@dataclass(frozen=True)
class Layout:
    """Partition counts of the three internal stages.

    They are fixed for the life of the state: band keys, sites and page ids are hashed onto these
    counts, so changing one after state exists would send probes to partitions that do not hold
    the keys. The app checks this at start-up (it is part of the scheme guard).
    """

    sites: int = 8
    bands: int = 8
    homes: int = 8

    def __post_init__(self) -> None:
        for name in ("sites", "bands", "homes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} partitions must be a positive integer, got {value!r}")

    def partitions(self, stage: str) -> int:
        """Partition count of a stage (``Stage.SITES``, ``BANDS`` or ``HOMES``)."""
        return {"sites": self.sites, "bands": self.bands, "homes": self.homes}[stage]

    def site(self, site: str) -> int:
        return xxhash.xxh3_64_intdigest(site.encode("utf-8", "surrogatepass")) % self.sites

    def home(self, page_id: str) -> int:
        return xxhash.xxh3_64_intdigest(page_id.encode("utf-8", "surrogatepass")) % self.homes

    def band(self, key: int) -> int:
        """Band keys are already well-mixed 64-bit hashes (band number included)."""
        return key % self.bands

    def retraction_band(self, page_id: str) -> int:
        """The band partition that passes a page's retraction on to its home, in clock order with
        its answers (every band partition answers every delivery, so one is enough)."""
        return xxhash.xxh3_64_intdigest(page_id.encode("utf-8", "surrogatepass"), seed=1) % self.bands
