"""The baseline of bench_stream.py: a bare Faust app whose one agent forwards each message unchanged.

    python benchmarks/forward_worker.py BOOTSTRAP APP_ID SOURCE_TOPIC SINK_TOPIC [FETCH_WAIT_MS]

The stream's Faust transport settings (``stream_lsh.stream.app.transport_settings``: fast start,
buffer and size limits), raw serializers, ``concurrency=1``, the short fetch wait of
:mod:`stream_lsh.stream.fetch_wait`; no state, no batching: per message one
``app.producer.send`` to the same partition of the sink (acked before the offset commit, as in the
stream). Runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import sys
from typing import Any

import faust

from stream_lsh.settings import Settings
from stream_lsh.stream.app import transport_settings
from stream_lsh.stream.fetch_wait import set_fetch_max_wait


def build_app(bootstrap: str, app_id: str, source: str, sink: str) -> faust.App:
    # the stream's transport settings at the stream's defaults (batch size, page size limit)
    app = faust.App(
        app_id,
        store="memory://",
        web_enabled=False,
        **transport_settings(Settings.load(environ={}), bootstrap),
    )
    topic = app.topic(
        source,
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
        allow_empty=True,
    )

    async def forward(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            await app.producer.send(sink, message.key, message.value, message.partition, None, None)

    app.agent(topic, name="forward", concurrency=1)(forward)
    return app


def main() -> None:
    bootstrap, app_id, source, sink = sys.argv[1:5]
    set_fetch_max_wait(int(sys.argv[5]) if len(sys.argv) > 5 else 10)
    worker = faust.Worker(
        build_app(bootstrap, app_id, source, sink),
        loglevel="warning",
        quiet=True,
        redirect_stdouts=False,
        override_logging=False,
    )
    worker.execute_from_commandline()


if __name__ == "__main__":
    main()
