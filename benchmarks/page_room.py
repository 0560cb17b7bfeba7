"""The largest input page that fits one Kafka message under STREAM_LSH_MAX_MESSAGE_BYTES.

    python benchmarks/page_room.py [--max-message-bytes 1048576] [--seed 5]

A page travels to its site stage as one record holding its raw JSON and its extracted text,
JSON-escaped (stream_lsh.pipeline.limits); a page whose record would not fit is a ``too_large``
dead letter. This grows a generated HTML page and a generated plain-text page until ingest refuses
them, and prints the largest input record of each that it still takes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import orjson

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.prepare import Preparer
from stream_lsh.pipeline.ingest import Ingest, Message
from stream_lsh.pipeline.limits import RecordLimit
from stream_lsh.pipeline.routing import Layout
from stream_lsh.synthetic import generate_corpus


def grown(page: dict, field: str) -> Callable[[int], bytes]:
    """The page with its body repeated ``n`` times (inside ``<body>`` for HTML)."""
    body = page[field]

    def make(n: int) -> bytes:
        if "</body>" in body:
            inner = body.split("<body>", 1)[-1].split("</body>", 1)[0]
            value = body.replace("</body>", inner * (n - 1) + "</body>", 1)
        else:
            value = "\n\n".join([body] * n)
        return orjson.dumps({**page, field: value})

    return make


def largest_fitting(ingest: Ingest, make: Callable[[int], bytes]) -> int:
    def fits(n: int) -> bool:
        return not ingest.pages([Message("pages", 0, 0, None, make(n), 1)]).dead_letters

    high = 1
    while fits(high):
        high *= 2
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return len(make(low))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-message-bytes", type=int, default=1 << 20)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    ingest = Ingest(
        Preparer(DedupConfig()),
        Layout(1),
        max_page_bytes=1 << 40,
        limit=RecordLimit(args.max_message_bytes),
    )
    pages = generate_corpus(200, seed=args.seed).pages
    for field in ("html", "text"):
        page = next(p for p in pages if field in p)
        size = largest_fitting(ingest, grown(page, field))
        print(f"{field:5s} page: largest input record that fits {size:,} bytes")


if __name__ == "__main__":
    main()
