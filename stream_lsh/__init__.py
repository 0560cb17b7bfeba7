"""stream-lsh: streaming near-duplicate filter for news pages.

The Python API is what this module exports; everything else is internal and may change::

    from stream_lsh import Deduplicator, Page

    dedup = Deduplicator()
    for decision in dedup.process_batch([Page(id=str(i), text=t) for i, t in enumerate(texts)]):
        print(decision.id, decision.status, decision.cluster_id)

:class:`Deduplicator` is the engine that ``stream-lsh dedup`` runs and the stream partitions;
:class:`DedupConfig` its parameters; :class:`Page` one input page (:func:`page_from_dict` reads
the JSON form the CLI and the stream take); :class:`Decision` the verdict on one page;
:func:`save_state` / :func:`load_state` carry an engine's index over to a later run;
:class:`SpreadTracker` follows the spread of clusters and fires :class:`Alert` s by
:class:`AlertRules` (story-spread alerts), fed a :class:`Member` per decided page. Every error
raised on purpose derives from :class:`StreamLshError` (:mod:`stream_lsh.errors`).
"""

from .core.dedup import Decision, DedupConfig, Deduplicator
from .core.page import Page, page_from_dict
from .core.shingles import ShingleKind, ShingleSpec
from .core.spread import Alert, AlertRules, Member, SpreadTracker
from .errors import (
    BrokerAuthenticationError,
    BrokerError,
    BrokerProcessError,
    BrokerUnreachableError,
    ExitCode,
    PageError,
    SettingsError,
    StateMismatchError,
    StreamLshError,
    TopicShapeError,
)
from .state import load_state, save_state

__all__ = [
    "Alert",
    "AlertRules",
    "BrokerAuthenticationError",
    "BrokerError",
    "BrokerProcessError",
    "BrokerUnreachableError",
    "Decision",
    "DedupConfig",
    "Deduplicator",
    "ExitCode",
    "Member",
    "Page",
    "PageError",
    "SettingsError",
    "ShingleKind",
    "ShingleSpec",
    "SpreadTracker",
    "StateMismatchError",
    "StreamLshError",
    "TopicShapeError",
    "load_state",
    "page_from_dict",
    "save_state",
]
