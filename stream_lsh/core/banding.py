"""LSH banding (MMDS sec. 3.4): b bands of r rows; pages that agree on every row of some band
become candidate pairs.

The probability that a pair of Jaccard similarity s becomes a candidate is the S-curve
``1 - (1 - s**r)**b`` (sec. 3.4.2), whose steepest rise sits near ``(1/b)**(1/r)``. (b, r) are
chosen for a threshold t by minimising the weighted areas of the two kinds of error under that
curve: false positives (the area under the curve left of t) and false negatives (the area above it
right of t), as datasketch does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import StateMismatchError
from .hashing import combine

__all__ = ["Banding", "error_rates", "optimal_banding", "s_curve"]

_GRID = 2001  # integration points on [0, 1]; the error areas are smooth, so this is plenty
_PAIRS_PER_CHUNK = 512  # (b, r) pairs evaluated at once: 512 x 2001 floats, 8 MB


def s_curve(similarity: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """Probability that a pair of this Jaccard similarity shares at least one band."""
    return 1.0 - (1.0 - np.power(similarity, rows)) ** bands


def _integrate(values: np.ndarray, step: float) -> np.ndarray:
    """Trapezoid rule along the last axis (numpy renamed trapz to trapezoid in 2.0; avoid both)."""
    area: np.ndarray = step * (values.sum(axis=-1) - 0.5 * (values[..., 0] + values[..., -1]))
    return area


def _areas(threshold: float, bands: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false-positive area, false-negative area) for each (bands[i], rows[i])."""
    s = np.linspace(0.0, 1.0, _GRID)
    curve = 1.0 - (1.0 - s[None, :] ** rows[:, None]) ** bands[:, None]
    below = s <= threshold
    step = float(s[1] - s[0])
    return _integrate(np.where(below, curve, 0.0), step), _integrate(np.where(below, 0.0, 1.0 - curve), step)


def error_rates(threshold: float, bands: int, rows: int) -> tuple[float, float]:
    """Expected (false-positive, false-negative) rates of a banding for a threshold.

    Assuming pair similarities uniform on [0, 1]: the chance that a pair below the threshold
    becomes a candidate, and the chance that a pair at or above it does not.
    """
    _check_threshold(threshold)
    fp, fn = _areas(threshold, np.array([bands]), np.array([rows]))
    fp_rate = float(fp[0] / threshold) if threshold > 0 else 0.0
    fn_rate = float(fn[0] / (1.0 - threshold)) if threshold < 1 else 0.0
    return fp_rate, fn_rate


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")


@lru_cache(maxsize=256)
def _optimal(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    best, best_loss = pairs[0], np.inf
    for low in range(0, len(pairs), _PAIRS_PER_CHUNK):  # bounded memory for large num_perm
        chunk = pairs[low : low + _PAIRS_PER_CHUNK]
        fp, fn = _areas(
            threshold, np.array([p[0] for p in chunk], float), np.array([p[1] for p in chunk], float)
        )
        loss = fp_weight * fp + fn_weight * fn
        i = int(np.argmin(loss))
        if loss[i] < best_loss:  # strict: on a tie the earlier pair (fewer bands) stays
            best, best_loss = chunk[i], loss[i]
    return best


def optimal_banding(
    threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> Banding:
    """The (b, r) with b*r <= num_perm that minimises fp_weight*FP + fn_weight*FN (see module doc)."""
    _check_threshold(threshold)
    if not isinstance(num_perm, int) or num_perm < 1:
        raise ValueError(f"num_perm must be a positive integer, got {num_perm!r}")
    if fp_weight < 0 or fn_weight < 0 or fp_weight + fn_weight == 0:
        raise ValueError(f"weights must be >= 0 and not both 0, got fp={fp_weight}, fn={fn_weight}")
    bands, rows = _optimal(float(threshold), num_perm, float(fp_weight), float(fn_weight))
    return Banding(bands=bands, rows=rows, num_perm=num_perm)


@dataclass(frozen=True)
class Banding:
    """b bands of r rows over the first b*r values of a signature of ``num_perm`` values."""

    bands: int
    rows: int
    num_perm: int

    def __post_init__(self) -> None:
        for name in ("bands", "rows", "num_perm"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.bands * self.rows > self.num_perm:
            raise ValueError(
                f"bands * rows = {self.bands} * {self.rows} = {self.bands * self.rows} exceeds the "
                f"signature length {self.num_perm}; lower one of them or raise num_perm"
            )

    @property
    def threshold(self) -> float:
        """The similarity where the S-curve rises fastest, about (1/b)**(1/r)."""
        return float((1.0 / self.bands) ** (1.0 / self.rows))

    def check_saved(self, saved: list[int], what: str) -> None:
        """Refuse state banded as ``saved`` ([b, r]) unless it is banded as this: its band keys
        would never meet this banding's."""
        if list(saved) != [self.bands, self.rows]:
            raise StateMismatchError(
                f"{what} was banded with b, r = {tuple(saved)}, this engine uses "
                f"{(self.bands, self.rows)}: band keys would not match. Use the same "
                "--threshold/--bands/--rows as when it was made."
            )

    def band_keys(self, signatures: np.ndarray) -> np.ndarray:
        """uint64 key of every band: shape (b,) for one signature, (pages, b) for a 2-D batch.

        The key mixes in the band number, so keys of different bands never collide by construction
        and all bands may share one table.
        """
        signatures = np.asarray(signatures)
        if signatures.shape[-1] != self.num_perm:
            raise ValueError(f"signature length {signatures.shape[-1]} != num_perm {self.num_perm}")
        used = signatures[..., : self.bands * self.rows].astype(np.uint64)
        grid = used.reshape(signatures.shape[:-1] + (self.bands, self.rows))
        band_ids = np.broadcast_to(np.arange(1, self.bands + 1, dtype=np.uint64), grid.shape[:-1])
        return combine([band_ids] + [grid[..., j] for j in range(self.rows)])
