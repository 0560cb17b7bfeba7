import orjson
import pytest

from stream_lsh.core.dates import read_date
from stream_lsh.core.page import PageError, address_key, page_from_dict


def test_minimal_page():
    page = page_from_dict({"id": "a", "text": "hello"})
    assert (page.id, page.text, page.html, page.published_at) == ("a", "hello", None, None)


def test_all_fields_and_integer_id():
    page = page_from_dict(
        {
            "id": 7,
            "html": "<p>x</p>",
            "url": "https://www.example.com/a",
            "title": "T",
            "published_at": "2026-03-01T12:00:00Z",
            "lang": "en",
        }
    )
    assert page.id == "7" and page.html == "<p>x</p>" and page.lang == "en"
    assert page.published_at == read_date("2026-03-01T13:00:00+01:00").seconds
    assert page.site == "example.com"


def test_news_please_names():
    page = page_from_dict(
        {
            "id": "n",
            "maintext": "body",
            "date_publish": "2017-07-17 17:03:00",
            "source_domain": "www.rt.com",
            "language": "en",
        }
    )
    assert page.text == "body" and page.source == "www.rt.com" and page.lang == "en"
    assert page.published_at == read_date("2017-07-17T17:03:00Z").seconds


def test_text_wins_over_html():
    page = page_from_dict({"id": "a", "text": "t", "html": "<p>h</p>"})
    assert page.text == "t" and page.html is None


def test_a_blank_text_does_not_hide_the_html():
    page = page_from_dict({"id": "a", "text": "  ", "html": "<p>h</p>"})
    assert page.html == "<p>h</p>" and page.text is None


def test_empty_text_is_a_valid_page():
    assert page_from_dict({"id": "a", "text": ""}).text == ""


@pytest.mark.parametrize(
    "record, code",
    [
        ({"text": "x"}, "missing_id"),
        ({"id": None, "text": "x"}, "missing_id"),
        ({"id": "", "text": "x"}, "bad_id"),
        ({"id": True, "text": "x"}, "bad_id"),
        ({"id": ["a"], "text": "x"}, "bad_id"),
        ({"id": "a"}, "missing_body"),
        ({"id": "a", "text": 5}, "bad_field"),
        ([1, 2], "not_an_object"),
    ],
)
def test_bad_pages_say_why(record, code):
    with pytest.raises(PageError) as caught:
        page_from_dict(record)
    assert caught.value.code == code


def test_reasons_never_echo_the_body():
    with pytest.raises(PageError) as caught:
        page_from_dict({"id": "a", "text": 5, "title": "secret title"})
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize("value", ["yesterday", "32/13/2026", True, {"$date": 1}, [2026], float("nan")])
def test_a_date_that_cannot_be_read_leaves_the_page_undated_not_rejected(value):
    page = page_from_dict({"id": "a", "text": "x", "published_at": value})
    assert page.published_at is None and page.date_problem == "unreadable"


def test_dates_as_feeds_write_them():
    rss = page_from_dict({"id": "a", "text": "x", "published_at": "Tue, 24 Nov 2026 10:00:00 GMT"})
    epoch = page_from_dict({"id": "b", "text": "x", "published_at": 1795514400})
    assert rss.published_at == epoch.published_at == read_date("2026-11-24T10:00:00Z").seconds
    assert page_from_dict({"id": "c", "text": "x", "published_at": None}).date_problem is None


def test_a_query_is_a_page_named_by_its_correlation_id():
    from stream_lsh.core.record import Rejected, parse_query

    text = "The council said that the plan would go ahead."
    assert parse_query(orjson.dumps({"correlation_id": "q1", "id": "x", "text": text}), 10_000).id == "q1"
    assert parse_query(orjson.dumps({"id": 7, "text": text}), 10_000).id == "7"
    for bad in ({"text": text}, {"correlation_id": True, "text": text}, {"correlation_id": "", "text": text}):
        rejected = parse_query(orjson.dumps(bad), 10_000)
        assert isinstance(rejected, Rejected) and rejected.code == "bad_id"
    assert parse_query(orjson.dumps({"correlation_id": "q2"}), 10_000).code == "missing_body"


def test_schema_registry_framed_json_is_read_as_its_json():
    """Confluent's wire format: a zero byte and a 4-byte schema id before the JSON; whatever the id
    bytes are (here a newline and a brace among them), the JSON after them is the record."""
    from stream_lsh.core.record import Rejected, parse_record, unframe

    page = b'{"id": "a", "text": "the text of a page"}'
    for schema_id in (b"\x00\x00\x00\x07", b"\x00\n{\x00", b"\xff\xff\xff\xff"):
        framed = b"\x00" + schema_id + page
        assert unframe(framed) == page
        parsed = parse_record(framed, 1_000)
        assert not isinstance(parsed, Rejected) and parsed.id == "a"
    assert unframe(page) == page and unframe(b"\x00") == b"\x00"
    assert isinstance(parse_record(b"\x00\x00\x00\x00\x07not json", 1_000), Rejected)


def test_a_page_fetched_again_has_the_same_address_key():
    """Tracking parameters, "www." and a trailing slash say nothing about which page it is; the rest
    of the query does."""
    key = address_key("https://www.example.com/news/storm-hits/?utm_source=feed&ref=frontpage")
    assert key == address_key("http://example.com/news/storm-hits") != 0
    assert address_key("https://example.com/story.php?id=1&utm_medium=x") == address_key(
        "https://example.com/story.php?id=1"
    )
    assert address_key("https://example.com/story.php?id=1") != address_key(
        "https://example.com/story.php?id=2"
    )
    assert address_key("https://example.com/a") != address_key("https://example.org/a")
    assert address_key(None) == address_key("") == address_key("http://[::1") == address_key("no-host") == 0
    # a script-built site's route is part of the address, a port too; an anchor is not
    assert address_key("https://x.example/#!/story/1") != address_key("https://x.example/#!/story/2")
    assert address_key("https://x.example:8080/a") != address_key("https://x.example/a")
    assert address_key("https://x.example/a#comments") == address_key("https://x.example/a")
    # a lone surrogate (from the Python API) is hashed, not refused
    assert address_key("https://x.example/story?title=caf\udce9") != 0
