"""``python -m stream_lsh`` is the ``stream-lsh`` command (how ``run`` starts its workers)."""

from .cli import main

main()
