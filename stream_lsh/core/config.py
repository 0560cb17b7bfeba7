"""The engine's configuration: every knob of the kernel, validated once, shared by batch and stream."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..errors import SettingsError
from .banding import Banding, optimal_banding
from .lead import DEFAULT_LEAD_SHARE
from .shingles import ShingleSpec
from .stopwords import DEFAULT_LANGUAGES, LANGUAGE_NAMES
from .verification import Verification

__all__ = ["DedupConfig", "Verify"]


class Verify(str, enum.Enum):
    """How a candidate is verified (a ``str``: ``Verify.JACCARD == "jaccard"``)."""

    SIGNATURE = "signature"  # estimated from the two signatures (see .verification)
    JACCARD = "jaccard"  # exact, on stored shingle sets (costs memory)


@dataclass(frozen=True)
class DedupConfig:
    """Every knob of the engine. Signature-defining ones also form the :class:`Scheme`.

    Args:
        threshold: Jaccard similarity from which a page is a duplicate, in (0, 1).
        containment: containment (the share of the smaller page found in the larger) from which a
            page is a duplicate, in (0, 1]; None judges by Jaccard similarity alone
            (:mod:`.verification`).
        num_perm: signature length n.
        seed: seeds token hashing and the minhash functions.
        shingles: shingle kind and size.
        lead_share: the share of a page's shingles, from its start, that counts twice, so that
            pages sharing text where both begin (copies) resemble more than pages sharing text
            elsewhere (a page quoting another); 0 ignores position (:mod:`.lead`).
        languages: stop-word languages (detection picks among them; the first wins ties).
        bands, rows: explicit banding; both None to choose it for the lowest Jaccard similarity a
            duplicate can have (:meth:`Verification.lowest_jaccard`).
        fp_weight, fn_weight: weights of the two error areas when choosing the banding.
        verify: "signature" (estimated from signatures) or "jaccard" (exact, on stored shingle sets).
        min_shingles: pages with fewer shingles are never compared by similarity: ``no_content``,
            unless their opening or headline finds or founds a cluster (:mod:`.keyed`).
        bucket_cap: most pages kept per LSH bucket.
        ttl: seconds of event time a page stays indexed; None keeps pages forever.
        boilerplate: learn and drop site-wide boilerplate blocks.
        boilerplate_min_pages: distinct contexts (pages with different other content) that make a
            block of a site boilerplate.
        drop_chrome: drop nav/aside/footer elements and form labels of HTML pages, and lists of headlines
            (runs of title-like blocks) of any page, before anything else.
        max_future: a ``published_at`` more than this many seconds after the clock is ignored.
    """

    threshold: float = 0.3
    containment: float | None = 0.7
    num_perm: int = 128
    seed: int = 1
    shingles: ShingleSpec = field(default_factory=ShingleSpec)
    lead_share: float = DEFAULT_LEAD_SHARE
    languages: tuple[str, ...] = DEFAULT_LANGUAGES
    bands: int | None = None
    rows: int | None = None
    fp_weight: float = 0.5
    fn_weight: float = 0.5
    verify: Verify = Verify.SIGNATURE
    min_shingles: int = 5
    bucket_cap: int = 64
    ttl: float | None = 3 * 86400.0
    boilerplate: bool = True
    boilerplate_min_pages: int = 2
    drop_chrome: bool = True
    max_future: float = 86400.0

    def __post_init__(self) -> None:
        """Every knob checked at once: a bad one is a :class:`SettingsError` (a ``ValueError`` and a
        ``StreamLshError``) that names it."""
        try:
            self._check()
        except SettingsError:
            raise
        except ValueError as error:
            raise SettingsError(str(error)) from None

    def _check(self) -> None:
        if not isinstance(self.seed, int) or not 0 <= self.seed < 1 << 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {self.seed!r}")
        if self.max_future < 0:
            raise ValueError(f"max_future must be >= 0 seconds, got {self.max_future}")
        self.verification()  # validates threshold and containment
        if (self.bands is None) != (self.rows is None):
            raise ValueError("give both bands and rows, or neither (to choose them from the threshold)")
        try:
            object.__setattr__(self, "verify", Verify(self.verify))
        except ValueError:
            raise ValueError(f"verify must be 'signature' or 'jaccard', got {self.verify!r}") from None
        if not 0.0 <= self.lead_share <= 1.0:
            raise ValueError(f"lead_share must be in [0, 1], got {self.lead_share!r}")
        if self.min_shingles < 1:
            raise ValueError(f"min_shingles must be >= 1, got {self.min_shingles}")
        if self.bucket_cap < 1:
            raise ValueError(f"bucket_cap must be >= 1, got {self.bucket_cap}")
        if self.ttl is not None and self.ttl <= 0:
            raise ValueError(f"ttl must be positive seconds or None, got {self.ttl}")
        if self.boilerplate_min_pages < 2:
            raise ValueError(f"boilerplate_min_pages must be >= 2, got {self.boilerplate_min_pages}")
        unknown = [lang for lang in self.languages if lang not in LANGUAGE_NAMES]
        if unknown or not self.languages:
            raise ValueError(f"unknown stop-word languages {unknown}; available: {', '.join(LANGUAGE_NAMES)}")
        self.banding()  # validates bands/rows against num_perm

    def verification(self) -> Verification:
        return Verification(self.threshold, self.containment)

    def banding(self) -> Banding:
        if self.bands is not None and self.rows is not None:
            return Banding(bands=self.bands, rows=self.rows, num_perm=self.num_perm)
        reach = self.verification().lowest_jaccard()
        return optimal_banding(reach, self.num_perm, self.fp_weight, self.fn_weight)
