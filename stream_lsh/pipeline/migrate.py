"""Stage snapshots written by older versions, brought to the current form.

A journal's head row names the format its snapshot was written in (:mod:`.journal`). Format 2
(stream-lsh before typed stage messages) kept a band partition's entries and a home's deliveries,
decisions, clusters and waiters as positional lists; format 3 names every field. The messages in
journal segments did not change, so only snapshots need this. Pure: plain data in, plain data out.
"""

from __future__ import annotations

from typing import Any

from .outbox import Stage

__all__ = ["upgrade"]

State = dict[str, Any]


def upgrade(stage: str, state: State, written_in: int) -> State:
    """``state``, a snapshot of ``stage`` written in format ``written_in``, in the current form."""
    if written_in == 2:
        return {Stage.SITES: _sites_2, Stage.BANDS: _bands_2, Stage.HOMES: _homes_2}[stage](state)
    return state


def _sites_2(state: State) -> State:
    return state  # the learner's state and the marks: named already


def _bands_2(state: State) -> State:
    fields = ("id", "signature", "keys", "content_hash", "body_hash", "event_time", "home")
    rows = state["entries"]
    upgraded = {**state, "entries": {name: [row[i] for row in rows] for i, name in enumerate(fields)}}
    if "held" in state:
        upgraded["held"] = [
            {"mark": mark, "sequence": sequence, "message": message}
            for mark, sequence, message in state["held"]
        ]
    return upgraded


def _homes_2(state: State) -> State:
    return {
        **state,
        "flight": [_delivery_2(row) for row in state["flight"]],
        "queries": [_delivery_2(row) for row in state["queries"]],
        "done": [_done_2(row) for row in state["done"]],
        "history": [_done_2(row) for row in state["history"]],
        "clusters": [
            {"id": cluster_id, "first": first, "live": live, "members": members, "updated_at": updated_at}
            for cluster_id, first, live, members, updated_at in state["clusters"]
        ],
        "waiters": [
            {
                "id": page_id,
                "clock": clock,
                "body_hash": body_hash,
                "waiting": [
                    dict(zip(("id", "clock", "body_hash", "home", "query"), w, strict=True)) for w in waiting
                ],
            }
            for (page_id, clock, body_hash), waiting in state["waiters"]
        ],
        "expiry": [
            {"at": at, "sequence": sequence, "cluster": cluster, "id": page_id}
            for at, sequence, cluster, page_id in state["expiry"]
        ],
    }


def _delivery_2(row: list[Any]) -> State:
    (
        page_id,
        query,
        clock,
        event_time,
        date_ignored,
        body_hash,
        raw,
        targets,
        no_content,
        results,
        links,
        status,
        awaiting,
        resolved,
        delete_after,
        repeats,
    ) = row
    return {
        "id": page_id,
        "query": query,
        "clock": clock,
        "event_time": event_time,
        "date_ignored": date_ignored,
        "body_hash": body_hash,
        "raw": raw,
        "targets": targets,
        "no_content": no_content,
        "answers": [answer for _, answer in results],  # the band partition is in the answer
        "links": [link for _, link in links],
        "status": [
            {"candidate": candidate, "standing": standing, "cluster": cluster, "cluster_home": cluster_home}
            for candidate, (standing, cluster, cluster_home) in status
        ],
        "awaiting": awaiting,
        "resolved": resolved,
        "delete_after": delete_after,
        "repeats": repeats,
    }


def _done_2(row: list[Any]) -> State:
    page_id, clock, event_time, body_hash, decision, targets, cluster_home, until = row
    return {
        "id": page_id,
        "clock": clock,
        "event_time": event_time,
        "body_hash": body_hash,
        "decision": decision,
        "targets": targets,
        "cluster_home": cluster_home,
        "until": until,
    }
