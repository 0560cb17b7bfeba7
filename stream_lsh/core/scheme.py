"""The signature scheme: everything that decides which 64-bit values a page's signature holds.

Two signatures are comparable only if they were made under the same scheme, and band keys only
under the same scheme and banding. State built under one scheme must never be probed with
another: the comparison would silently return nonsense. :class:`Scheme` has a fingerprint that
indexes and saved state carry, and :func:`check_compatible` refuses a mismatch with a message that
names the parameters that differ.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any

from ..errors import StateMismatchError
from .names import EARLIER_NAMES_RULES
from .wording import EARLIER_RULES

__all__ = ["Scheme", "StateMismatchError", "check_compatible", "same_scheme"]

#: Bump when normalisation or tokenisation changes the tokens a text yields.
TEXT_PIPELINE_VERSION = "nfkc-casefold-ws1/words-v1"
HASH_NAME = "xxh3_64+mix64"
SIGNATURE_NAME = "affine-mod2^32-of-top32"


@dataclass(frozen=True)
class Scheme:
    """Signature-defining parameters. Build it from the components, not by hand.

    ``stop_words_*`` are empty for shingle kinds that do not use stop words.
    """

    shingles: str
    shingle_size: int
    num_perm: int
    seed: int
    stop_words_source: str = ""
    stop_words_digest: str = ""
    stop_words_languages: tuple[str, ...] = ()
    lead_share: float = 0.0  # the share of shingles that makes the lead (.lead); 0 in schemes before it
    lead_rule: str = ""  # the lead's version and constants
    names_rule: str = ""  # how the names that part a template's items are taken (.names)
    text_pipeline: str = TEXT_PIPELINE_VERSION
    hash: str = HASH_NAME
    signature: str = SIGNATURE_NAME

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop_words_languages"] = list(self.stop_words_languages)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scheme:
        data = dict(data)
        data["stop_words_languages"] = tuple(data.get("stop_words_languages", ()))
        return cls(**data)  # a scheme saved before the lead counted has lead_share 0: refused by default

    @cached_property  # computed once: the index checks it on every query and insert
    def fingerprint(self) -> str:
        """16 hex digits identifying the scheme; equal fingerprints mean comparable signatures."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def check_compatible(expected: Scheme, offered: Scheme, what: str = "state") -> None:
    """Raise :class:`StateMismatchError` unless ``offered`` equals ``expected``.

    State built before pages kept their names (``names_rule`` empty), or before they kept the
    wording their names are set in (the rule without its ``+wording`` part), is of the same
    scheme: neither changes signatures, and a page without names or slots is never named or worded
    apart from another (:mod:`.names`, :mod:`.wording`), so its entries are compared as they were.
    So is state built under an earlier wording whose slots the current one reads
    (:data:`.wording.EARLIER_RULES`)."""
    if same_scheme(expected, offered):
        return
    mine, theirs = expected.to_dict(), offered.to_dict()
    diffs = [f"{key}: {theirs[key]!r} (expected {mine[key]!r})" for key in mine if mine[key] != theirs[key]]
    raise StateMismatchError(
        f"{what} was built with signature scheme {offered.fingerprint}, but this index uses "
        f"{expected.fingerprint}; differing parameters: {'; '.join(diffs)}. Signatures from different "
        "schemes cannot be compared: rebuild the state with the same parameters, or start from empty state."
    )


def same_scheme(expected: Scheme, offered: Scheme) -> bool:
    """Whether state built under ``offered`` may be probed under ``expected``: the same scheme, or
    one whose names rule is an earlier part of this one's (:func:`check_compatible`)."""
    if _names_rule_before(offered.names_rule, expected.names_rule):
        offered = replace(offered, names_rule=expected.names_rule)
    return expected == offered


def _names_rule_before(older: str, newer: str) -> bool:
    """Whether a names rule is an earlier form of another: none at all, the rule before a part of
    it (``+wording-...``) was added, or the rule with earlier names and wording whose sketches and
    slots the newer one reads as they are (:data:`.names.EARLIER_NAMES_RULES`,
    :data:`.wording.EARLIER_RULES`)."""
    if older == "":
        return True
    names, _, wording = older.partition("+")
    new_names, _, new_wording = newer.partition("+")
    if names != new_names and names not in EARLIER_NAMES_RULES:
        return False
    return not wording or wording == new_wording or wording in EARLIER_RULES
