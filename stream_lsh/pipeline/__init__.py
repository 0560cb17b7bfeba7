"""The stream's dataflow as pure state machines: no Kafka, no Faust, no I/O.

A page crosses three stages (docs/architecture.md has the whole picture):

``ingest`` (input partition)
    validate, extract text blocks; route the page to its site's partition.
``signer`` (site partition, as many as workers share)
    learn and drop site boilerplate, shingle, minhash, band; send the signed page to the decide
    partition, then the partition's release point.
``decide`` (one partition)
    apply signed pages in (clock, id) order with batch's own engine: decide, index, follow the
    clusters' spread; emit the decision, the unique page, the cluster's new state and alerts.

Each stage consumes *batches* of records and returns an :class:`~stream_lsh.pipeline.outbox.Outbox`
of batches for the next stages plus the product's outputs. The Faust layer only moves outboxes
onto topics; the tests drive the same stages in-process.
"""
