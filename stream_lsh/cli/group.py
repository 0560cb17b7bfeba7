"""The ``stream-lsh`` command group, which every command module adds its commands to."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="stream-lsh")
def cli() -> None:
    """Near-duplicate detection for news pages: stop-word shingles, minhash and LSH (MMDS ch. 3).

    Every engine flag can also be set as STREAM_LSH_<FLAG> (e.g. STREAM_LSH_THRESHOLD=0.6).
    """
