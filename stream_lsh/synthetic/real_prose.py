"""Real English news prose for the generator (``prose="real"``), from a package on PyPI.

The pseudo-word generator can only show what it was written to show: it writes paragraphs,
clean sentences and no two stories that share a phrase by accident. Judging accuracy needs real
prose as well. The Lee corpus of news articles (Lee, Pincombe and Welsh, 2005: ABC news, 2001-02,
349 articles of 45-620 words, one article per line) ships in the test data of the gensim wheel on
PyPI, which this machine's only network, the package registries, can reach. ``fetch`` downloads
that wheel with pip once and keeps the two text files in the cache; nothing of it is committed.

Some of the articles are reruns of each other; an article that shares half of its word 4-grams
with an earlier one is dropped, so that two stories of a generated corpus never share text
unless the generator put it there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from pathlib import Path

from ..errors import CorpusError

__all__ = ["GENSIM_VERSION", "articles", "cache_dir", "fetch"]

#: The wheel whose test data holds the articles (its files are read, never imported).
GENSIM_VERSION = "4.4.0"
_FILES = ("lee_background.cor", "lee.cor")
_MEMBER = "gensim/test/test_data/{}"
#: An article sharing this share of its word 4-grams with an earlier one is a rerun: dropped.
RERUN_OVERLAP = 0.5
_WORD = re.compile(r"\w+")


def cache_dir() -> Path:
    """``$STREAM_LSH_PROSE_CACHE``, else ``$XDG_CACHE_HOME/stream-lsh/prose`` (``~/.cache/...``)."""
    explicit = os.environ.get("STREAM_LSH_PROSE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "stream-lsh" / "prose"


def fetch(directory: Path | None = None) -> Path:
    """The directory holding the articles' files, downloading the gensim wheel with pip (from the
    package index pip is configured for) if they are not there yet."""
    directory = directory or cache_dir()
    if all((directory / name).is_file() for name in _FILES):
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64",
            "--dest", scratch, f"gensim=={GENSIM_VERSION}",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = list(Path(scratch).glob("gensim-*.whl"))
        if done.returncode != 0 or not wheels:
            raise CorpusError(
                f"could not download gensim {GENSIM_VERSION} with pip, whose test data holds the "
                f"real news prose: {done.stderr.strip()[-300:] or 'no wheel'}"
            )
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in _FILES:  # each file appears whole or not at all: tests fetch in parallel
                part = directory / f".{name}.{os.getpid()}"  # beside it: a rename within one directory
                part.write_bytes(wheel.read(_MEMBER.format(name)))
                os.replace(part, directory / name)
    return directory


@cache
def articles() -> tuple[str, ...]:
    """The real articles, reruns dropped, in the files' order (fetched on first use)."""
    directory = fetch()
    texts = [
        line.strip()
        for name in _FILES
        for line in (directory / name).read_text(encoding="latin-1").splitlines()
        if line.strip()
    ]
    kept: list[str] = []
    grams_kept: list[set[tuple[str, ...]]] = []
    for text in texts:
        words = _WORD.findall(text.lower())
        grams = {tuple(words[i : i + 4]) for i in range(len(words) - 3)}
        if all(len(grams & other) < RERUN_OVERLAP * min(len(grams), len(other)) for other in grams_kept):
            kept.append(text)
            grams_kept.append(grams)
    return tuple(kept)
