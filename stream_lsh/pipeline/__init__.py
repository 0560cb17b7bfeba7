"""The stream's dataflow as pure state machines: no Kafka, no Faust, no I/O.

A page crosses four stages, each partitioned so that more workers share the load
(docs/architecture.md has the whole picture):

``ingest`` (input partition)
    validate, extract text blocks; route the page to its site's partition.
``signer`` (site partition)
    learn and drop site boilerplate, shingle, minhash, band; register the page at its home and
    send one probe per band partition.
``shard`` (band partition)
    probe and insert the band keys it owns, verify candidates against stored signatures, answer
    the page's home.
``gather`` (home partition, by page id)
    collect every band's answer, settle races with pages in flight, decide, and emit the
    decision, the unique page and the cluster's new state.

Each stage consumes *batches* of records and returns an :class:`~stream_lsh.pipeline.outbox.Outbox`
of batches for the next stages plus the product's outputs. The Faust layer only moves outboxes
onto topics; the tests drive the same stages in-process.
"""
