"""The baseline of bench_stream.py: a bare Faust app whose one agent forwards each message unchanged.

    python benchmarks/forward_worker.py BOOTSTRAP APP_ID SOURCE_TOPIC SINK_TOPIC [FETCH_WAIT_MS]

Same Faust settings as the stream's app (fast start, raw serializers, ``concurrency=1``, the short
fetch wait of :mod:`stream_lsh.stream.fetch_wait`), no state, no batching: per message one
``app.producer.send`` to the same partition of the sink (acked before the offset commit, as in the
stream). Runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import sys
from typing import Any

import faust

from stream_lsh.stream.fetch_wait import set_fetch_max_wait

BATCH = 256  # the stream's default batch_size, which sizes its stream buffer
MAX_BYTES = 10_000_000  # the stream's default max_page_bytes, which sizes its fetches and requests


def build_app(bootstrap: str, app_id: str, source: str, sink: str) -> faust.App:
    app = faust.App(
        app_id,
        broker="kafka://" + ";".join(h.strip() for h in bootstrap.split(",")),
        store="memory://",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        broker_rebalance_timeout=4.0,
        broker_session_timeout=6.0,
        broker_heartbeat_interval=1.0,
        broker_commit_interval=1.0,
        stream_buffer_maxsize=max(2 * BATCH, 256),
        producer_max_request_size=max(2 * MAX_BYTES, 1_048_576),
        consumer_max_fetch_size=max(2 * MAX_BYTES, 1_048_576),
        topic_allow_declare=False,
    )
    topic = app.topic(source, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw",
                      allow_empty=True)

    async def forward(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            await app.producer.send(sink, message.key, message.value, message.partition, None, None)

    app.agent(topic, name="forward", concurrency=1)(forward)
    return app


def main() -> None:
    bootstrap, app_id, source, sink = sys.argv[1:5]
    set_fetch_max_wait(int(sys.argv[5]) if len(sys.argv) > 5 else 10)
    worker = faust.Worker(build_app(bootstrap, app_id, source, sink), loglevel="warning", quiet=True,
                          redirect_stdouts=False, override_logging=False)
    worker.execute_from_commandline()


if __name__ == "__main__":
    main()
