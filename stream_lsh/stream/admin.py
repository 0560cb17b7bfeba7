"""Creating the topics, and refusing to run on topics of the wrong shape."""

from __future__ import annotations

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from .topics import TopicSpec

__all__ = ["TopicShapeError", "ensure_topics"]


class TopicShapeError(RuntimeError):
    """An existing topic has another partition count than the state layout needs."""


async def ensure_topics(bootstrap: str, specs: list[TopicSpec]) -> None:
    """Create missing topics; check the partition count of those that exist.

    Internal topics are hashed onto their partition count (sites, band keys, page ids), so a topic
    with another count would route records to partitions that do not hold their state.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = await _partition_counts(admin, [spec.name for spec in specs])
        missing = [spec for spec in specs if spec.name not in existing]
        for spec in specs:
            have = existing.get(spec.name)
            if have is not None and have != spec.partitions:
                raise TopicShapeError(
                    f"topic {spec.name!r} has {have} partitions, the settings say {spec.partitions}: "
                    "set the matching STREAM_LSH_*_PARTITIONS or use a new app id"
                )
        if missing:
            try:
                await admin.create_topics([NewTopic(s.name, s.partitions, 1, topic_configs=s.config) for s in missing])
            except TopicAlreadyExistsError:
                pass  # another worker created them meanwhile
    finally:
        await admin.close()


async def _partition_counts(admin: AIOKafkaAdminClient, names: list[str]) -> dict[str, int]:
    """Partition counts of the topics that exist. Only listed topics are described: the embedded
    broker creates a topic (with 4 partitions) when asked to describe one it does not have."""
    listed = set(await admin.list_topics())
    names = [name for name in names if name in listed]
    if not names:
        return {}
    counts: dict[str, int] = {}
    for topic in await admin.describe_topics(names):
        partitions = topic.get("partitions") or []
        if topic.get("error_code", 0) == 0 and partitions:
            counts[topic["topic"]] = len(partitions)
    return counts
