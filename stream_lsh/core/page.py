"""The input page: validation of one decoded JSON object into a :class:`Page`.

Accepted fields: ``id`` (required, string or integer), ``text`` or ``html`` (one required),
optional ``url``, ``title``, ``source``, ``published_at`` and ``lang``; news-please names are
accepted too (``maintext``, ``date_publish``, ``source_domain``, ``language``). A page that breaks
these rules raises :class:`PageError` with a reason that is safe to log (it never contains the
page body). A date is read as real feeds write it (:mod:`.dates`); one that cannot be read leaves
the page undated, never rejected: the story must not vanish from a feed because of its date.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import SplitResult, parse_qsl, urlsplit

from ..errors import PageError
from .dates import DateReading, read_date
from .hashing import xxh64_text

__all__ = [
    "Page",
    "PageError",
    "address",
    "address_key",
    "is_route",
    "page_from_dict",
    "site_key",
    "tracks_reader",
]

MAX_ID_LENGTH = 1024
#: Where <title>, <link rel=canonical> and og: tags live; bounded so odd pages stay cheap.
HEAD_BYTES = 65_536
_SITE_SEED = 0x517E  # a site key's own seed: it never equals another key of the same name
_ADDRESS_SEED = 0xADD5  # an address key's own seed
#: Query keys that say where a reader came from, not which page it is (with ``utm_*``): a page
#: fetched again from a front ("?ref=frontpage") or a newsletter is the same page, and a site's
#: root with one ("/?ref=logo") is still its front.
_TRACKING_KEYS = frozenset(
    "ref ref_src ref_url src cmp cmpid fbclid gclid dclid msclkid mc_cid mc_eid ocid s_cid smid share "
    "igshid yclid".split()
)
_SITE_TAG = re.compile(
    r"<(?:link|meta)\b[^>]*?(?:\brel\s*=\s*[\"']?canonical|\bproperty\s*=\s*[\"']og:(?:url|site_name))[^>]*>",
    re.IGNORECASE,
)
_SITE_VALUE = re.compile(r"\b(?:href|content)\s*=\s*[\"']([^\"']+)", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    """One news page. Exactly one of ``text``/``html`` is set (a non-blank ``text`` wins when both
    are given).

    ``published_at`` may be given as a JSON record gives it (an ISO 8601 or RFC 2822 string, epoch
    seconds or milliseconds) or as a :class:`~datetime.datetime` (naive: UTC); it is read as
    :func:`page_from_dict` reads it and kept as POSIX seconds. One that cannot be read leaves the
    page undated (``date_problem`` says so), as in a feed."""

    id: str
    text: str | None = None
    html: str | None = None
    url: str | None = None
    title: str | None = None
    source: str | None = None
    published_at: float | None = None  # POSIX seconds, UTC
    lang: str | None = None
    date_problem: str | None = None  # "unreadable": a published_at was given but could not be read

    def __post_init__(self) -> None:
        given = self.published_at
        if given is None or (type(given) is float and self.date_problem is None):
            return  # already seconds (what page_from_dict builds)
        if isinstance(given, datetime):
            given = (given if given.tzinfo else given.replace(tzinfo=timezone.utc)).timestamp()
        reading = read_date(given)
        object.__setattr__(self, "published_at", reading.seconds)
        object.__setattr__(self, "date_problem", self.date_problem or reading.problem)

    @property
    def date(self) -> DateReading:
        return DateReading(self.published_at, self.date_problem)

    @property
    def site(self) -> str:
        """The outlet the page belongs to: ``source``, else the host of ``url``, else the site the
        HTML names (canonical link, ``og:url``, ``og:site_name``), else '' (unknown)."""
        if self.source:
            return self.source.strip().lower()
        if self.url:
            return _host(self.url)
        if self.html:
            return _site_in_html(self.html)
        return ""


def site_key(site: str) -> int:
    """A site as the window keeps it beside each page: a number (0: no site), so that a rule can
    tell whether two pages are of one site (:func:`.roundup.may_copy`) without storing its name."""
    return (xxh64_text(site, _SITE_SEED) or 1) if site else 0


def address(url: str | None) -> SplitResult | None:
    """A page's address in its parts; None when it has none, or one that cannot be read (an invalid
    IPv6 literal): a page is never refused, nor a worker stopped, for its address. Every rule that
    asks a page's address (its site, and whether it is a search, a front or a tag page) reads it
    here."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        parts.hostname  # noqa: B018 - the host is read lazily, and may be what cannot be read
    except ValueError:
        return None
    return parts


def tracks_reader(key: str) -> bool:
    """Whether a query key only tracks where the reader came from (:data:`_TRACKING_KEYS`,
    ``utm_*``), saying nothing of which page it is."""
    key = key.lower()
    return key.startswith("utm_") or key in _TRACKING_KEYS


def is_route(fragment: str) -> bool:
    """Whether an address's fragment is a script-built site's route ("#!/story/1", "#/a/slug"),
    which names a page, not a place on one."""
    return fragment.startswith(("!", "/"))


def address_key(url: str | None) -> int:
    """Where a page was fetched, as one number (0: no address, or one that cannot be read): its
    host and port without "www.", its path without a trailing slash, its query without the keys
    that only track a reader (:func:`tracks_reader`), in order, and its route (:func:`is_route`).
    A page fetched again at its address is the same page, whatever it holds this time
    (:mod:`.boilerplate`); the rest of the query stays, since ``story.php?id=1`` and
    ``story.php?id=2`` are two stories."""
    parts = address(url)
    if parts is None or not parts.hostname:
        return 0
    query = "&".join(
        f"{name}={value}"
        for name, value in sorted(parse_qsl(parts.query, keep_blank_values=True))
        if not tracks_reader(name)
    )
    host = parts.netloc.rpartition("@")[2].lower().removeprefix("www.")
    route = parts.fragment if is_route(parts.fragment) else ""
    return xxh64_text(f"{host}{parts.path.rstrip('/')}?{query}#{route}", _ADDRESS_SEED) or 1


def _host(url: str) -> str:
    parts = address(url)
    return "" if parts is None else (parts.hostname or "").removeprefix("www.")


def _site_in_html(html: str) -> str:
    for tag in _SITE_TAG.findall(html[:HEAD_BYTES]):
        value = _SITE_VALUE.search(tag)
        if value:
            text = value.group(1).strip()
            site = _host(text) if "://" in text else text.lower()
            if site:
                return site
    return ""


def _optional_str(record: Mapping[str, Any], *names: str) -> str | None:
    for name in names:
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise PageError("bad_field", f"field {name!r} must be a string, got {type(value).__name__}")
        return value
    return None


def _page_id(record: Mapping[str, Any]) -> str:
    value = record.get("id")
    if value is None:
        raise PageError("missing_id", "missing required field 'id'")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise PageError("bad_id", f"field 'id' must be a string or integer, got {type(value).__name__}")
    page_id = str(value)
    if not page_id.strip():
        raise PageError("bad_id", "field 'id' is empty")
    if len(page_id) > MAX_ID_LENGTH:
        raise PageError("bad_id", f"field 'id' is longer than {MAX_ID_LENGTH} characters")
    return page_id


def page_from_dict(record: Any) -> Page:
    """Validate one decoded JSON value into a :class:`Page` or raise :class:`PageError`."""
    if not isinstance(record, dict):
        raise PageError("not_an_object", f"a page must be a JSON object, got {type(record).__name__}")
    page_id = _page_id(record)
    text = _optional_str(record, "text", "maintext")
    html = _optional_str(record, "html")
    if text is not None and html is not None:
        text, html = (text, None) if text.strip() else (None, html)  # an empty text must not hide the HTML
    if text is None and html is None:
        raise PageError("missing_body", "page has neither 'text' (or 'maintext') nor 'html'")
    date = read_date(_first(record, "published_at", "date_publish"))
    return Page(
        id=page_id,
        text=text,
        html=html,
        url=_optional_str(record, "url"),
        title=_optional_str(record, "title"),
        source=_optional_str(record, "source", "source_domain"),
        published_at=date.seconds,
        lang=_optional_str(record, "lang", "language"),
        date_problem=date.problem,
    )


def _first(record: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of ``names`` that is present and not null."""
    for name in names:
        if record.get(name) is not None:
            return record[name]
    return None
