"""Notices: pages that say their article is not here.

A crawler fetches many pages that carry no article: an error page ("Page not found", "503 Service
Unavailable"), a bot check, a consent or login wall, a paywall stub, a "not available in your
region" message, a removal notice. Most come with HTTP status 200 (a *soft* 404), so nothing but
their text tells them apart. Each is the same few lines at every address of its site, so signed
like a story, the first such page was ``unique`` and every later one its ``duplicate``: a pipeline
indexed the first, spread alerts counted a bot check spreading like a story, and a user asking
"which pages repeat a story" got a cluster of error pages. On three outside sets built blind, such
pages made a third to a half of all false pairs (docs/accuracy.md). The seventeenth's showed three
more phrases: a 503 page that says "Service temporarily unavailable" and that "our servers are
busy", a redirect stub ("Redirecting... If you are not redirected automatically, click here") and
a login wall that says the reader "reached the limit of free articles"; 16 such pages had made
43 of its 165 false pairs (seed 1). The eighteenth's: a consent dialog in the industry's stock
words ("Before you continue to ...", "Personalised ads and content, ad and content measurement"),
a login wall "available to registered users" ("Log in or create a free account"), and a blog
engine's "can't find what you're looking for"; 17 such pages had made 116 of its 464 false pairs
(seed 1). The twenty-first's: a soft 404 whose first sentence names the page and whose others
("It may have been moved or deleted, or the address may have been typed incorrectly") did not,
leaving more than the room, and a CDN's error page ("Web server is returning an unknown error");
12 such pages had made 46 of its 219 false pairs (seed 1).

So a page whose text is a notice is ``no_content``, with the notice's kind on its record, and is
never indexed. A page is a notice when a block of its text holds one of the stock phrases such
pages use (below, per kind, in the default languages), and what else it holds is at most
:data:`ROOM` words: a link home, a search box, a newsletter line. The room is what keeps articles
safe: a paywall page that shows the story's first sentence, or a short alert that happens to say
"access denied", holds more than a notice does, or no stock phrase at all. The phrases name the
page itself ("this page", "the article you requested", "your browser"), not the world, so a story
about a court denying access, or cookies, is no notice.

The test reads what is left of the page once its chrome (:mod:`.text`) and its site's
boilerplate (:mod:`.boilerplate`) are dropped. So a site's cookie banner or "Already a subscriber?
Log in" line, once learnt, never makes a short alert on that site a notice; and the text a plain
text page holds around its notice (the site's links and blurbs) does not hide the notice. Batch
and the stream run the same step with the same learner, so they judge alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

__all__ = ["KINDS", "MAX_WORDS", "OVERLAYS", "OVERLAY_ROOM", "ROOM", "notice_kind", "says_notice"]

#: What a notice page may hold besides its notice, in words.
ROOM = 25
#: A notice is short, its stock text and a few links: a page of more words is read as a page
#: without looking for phrases (most pages, so the test costs next to nothing).
MAX_WORDS = 150
#: The kinds of notice that also sit over an article: a paywall or a login box below a story's
#: first sentence, a cookie banner over it. A page with only these is a notice when the rest is
#: under a lead sentence (:data:`OVERLAY_ROOM` words): with one, it is its story's teaser.
OVERLAYS = frozenset({"consent", "paywall", "login"})
OVERLAY_ROOM = 15

_PAGE = r"(?:page|article|story|content|video|post|link|url|site|issue)"
_SOUGHT = r"(?: you (?:requested|were looking for|are looking for|tried to reach))?"
#: The stock phrases of each kind of notice, matched in normalised (case-folded) text.
KINDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "not_found": (
            r"\bpage not found\b",
            r"^404\b",
            r"\b(?:error|http) 404\b",
            r"\b404 (?:error|not found)\b",
            rf"\b{_PAGE}{_SOUGHT} (?:could not|cannot|can't|can not) be found\b",
            r"\bcan't find (?:that|this|the) page\b",
            r"\bcan't find what you(?:'re| are) looking for\b",
            rf"\b(?:this|that|the) {_PAGE} (?:doesn't|does not|no longer) exists?\b",
            r"\bpage you (?:requested|were looking for|are looking for)\b",
            r"\bpage (?:may have been|has been) (?:moved|removed|deleted)\b",
            r"^it may have been (?:moved|renamed),? (?:renamed,? )?or (?:deleted|removed)\b",
            r"\bor the (?:address|url|link) may have been (?:typed incorrectly|mistyped)\b",
            r"\blink you followed\b",
            r"\bseite (?:wurde )?nicht gefunden\b",
            r"\bpage (?:introuvable|non trouvée)\b",
            r"\bpágina no encontrada\b",
            r"\bpagina non trovata\b",
            r"\bpágina não encontrada\b",
            r"\bpagina niet gevonden\b",
            r"\bстраница не найдена\b",
            r"\b(?:página|pagina|seite|страница)\b[^.]{0,40}(?:\bno existe|\bexistiert (?:leider )?nicht|"
            r"\bnon esiste|\bnão existe|\bbestaat niet|\bне существует)",
            r"\bpage\b[^.]{0,40}\bn'existe pas\b",
        ),
        "removed": (
            rf"\b(?:this|the) {_PAGE}{_SOUGHT} (?:has been|was) (?:removed|deleted|taken down|unpublished)\b",
            rf"\b(?:this|the) {_PAGE}{_SOUGHT} is no longer available\b",
            r"^content removed\b",
            r"\bnicht mehr verfügbar\b",
            r"\bn'est plus disponible\b",
            r"\bya no está disponible\b",
            r"\bnon è più disponibile\b",
            r"\bnão está mais disponível\b",
            r"\bniet meer beschikbaar\b",
            r"\b(?:материал|страница|статья) (?:был[аио]? )?удал[её]н",
            r"\bбольше не доступ",
        ),
        "server_error": (
            r"\binternal server error\b",
            r"\bundergoing (?:scheduled )?maintenance\b",
            r"\bwe(?:'ll| will) be back soon\b",
            r"\b50[234] (?:bad gateway|service unavailable|gateway time-?out)\b",
            r"\bunable to service your request\b",
            r"\btrouble loading this page\b",
            r"^(?:the )?service (?:is )?temporarily unavailable\b",
            r"\bour servers? (?:are|is) (?:busy|overloaded)\b",
            r"^web server is returning an unknown error$",
            r"\bthe web page can ?not be displayed\b",
            r"^error 5\d\d$",
        ),
        "redirect": (
            r"^redirecting\W*$",
            r"\bif you are not redirected\b",
            r"\byou are being redirected\b",
        ),
        "bot_check": (
            r"\bverify (?:that )?you are (?:a )?human\b",
            r"\bare you a robot\b",
            r"\bchecking your browser\b",
            r"\baccess to this page has been denied\b",
            r"^access denied$",
            r"\bdon't have permission to access\b",
            r"\busing automation tools\b",
            r"\bddos protection\b",
            r"\bredirect to your requested content\b",
            r"\bunusual traffic from your\b",
            r"\b(?:you are|you're) not a robot\b",
            r"\bn'êtes pas un robot\b",
            r"\bkein roboter\b",
            r"\bno (?:es|eres) un robot\b",
            r"\bnon (?:sei|siete|è|essere) un robot\b",
            r"\bnão (?:é|és) um robô\b",
            r"\bgeen robot\b",
            r"\bне робот\b",
            r"\bzugriff verweigert\b",
            r"\baccès refusé\b",
            r"\bacceso denegado\b",
            r"\baccesso negato\b",
            r"\bacesso negado\b",
            r"\btoegang geweigerd\b",
            r"\bдоступ запрещ",
        ),
        "javascript": (
            r"\b(?:enable|turn on|activate) javascript\b",
            r"\bjavascript is (?:disabled|required|turned off|blocked)\b",
            r"\bjavascript and cookies are enabled\b",
            r"\bjavascript (?:aktivieren|einschalten|inschakelen)\b",
            r"\baktivieren sie (?:bitte )?javascript\b",
            r"\b(?:activer|activez) (?:le )?javascript\b",
            r"\b(?:habilita|activa) (?:el )?javascript\b",
            r"\babilita(?:re)? javascript\b",
            r"\bative o javascript\b",
            r"\bвключите javascript\b",
        ),
        "consent": (
            r"\bwe (?:and our (?:\d+ )?partners )?use cookies\b",
            r"\bthis (?:site|website) uses cookies\b",
            r"\b(?:to|of) our use of cookies\b",
            r"\binformation on (?:a|your) device\b",
            r"\bvalues? your privacy\b",
            r"\b(?:change|manage) your (?:choices|preferences|consent)\b",
            r"\blegitimate interest\b",
            r"\bprecise geolocation data\b",
            r"\bdevice scanning\b",
            r"\bbefore you continue to\b",
            r"\bpersonali[sz]ed ads and content\b",
            r"\bad and content measurement\b",
            r"\bour (?:\d+ )?(?:partners|vendors) include\b",
            r"\bwir verwenden cookies\b",
            r"\bnous utilisons des cookies\b",
            r"\butilizamos cookies\b",
            r"\butilizziamo (?:i )?cookie\b",
            r"\bwij gebruiken cookies\b",
            r"\bмы используем (?:файлы )?cookie",
        ),
        "paywall": (
            r"\b(?:available|reserved|exclusive) (?:only )?(?:to|for) (?:our )?(?:paying )?subscribers\b",
            r"\bis for subscribers\b",
            r"\bsubscribers only\b",
            r"\bsubscribe (?:now )?to (?:read|continue|keep reading|unlock)\b",
            r"\bsubscriber exclusive\b",
            r"\balready a subscriber\b",
            r"\bnot a subscriber\b",
            r"\b(?:reached|used) (?:your|the) (?:limit|allowance) of free (?:articles|stories)\b",
            r"\bnur für abonnenten\b",
            r"\bréservé aux abonnés\b",
            r"\bexclusivo para (?:suscriptores|assinantes)\b",
            r"\briservato agli abbonati\b",
            r"\balleen voor abonnees\b",
            r"\bтолько для подписчиков\b",
        ),
        "login": (
            r"\b(?:sign|log) ?in to (?:continue|read|keep reading|view|access)\b",
            r"\bforgot (?:your )?password\b",
            r"\b(?:available|reserved) (?:only )?(?:to|for) registered (?:users|readers|members)\b",
            r"\b(?:sign|log) ?in or (?:create|register for) (?:a |an )?(?:free )?account\b",
            r"\bcreate a free account to (?:continue|read|keep reading)\b",
        ),
        "geo_block": (
            r"\bnot available in your (?:region|country|location)\b",
            r"\bunavailable (?:due to|for) legal reasons\b",
            r"\baccess cannot be granted\b",
        ),
        "no_results": (r"\bno results found\b",),
    }
)
_KIND_OF = {f"k{number}": kind for number, kind in enumerate(KINDS)}
_BOUNDARY = r"\b"
assert all(phrase.startswith((r"\b", "^")) for phrases in KINDS.values() for phrase in phrases)
# one word boundary before the whole alternation, not one before each phrase: re then tries the
# phrases only where a word starts, which makes a search about seven times faster
_NOTICE = re.compile(
    r"\b(?:"
    + "|".join(
        f"(?P<k{number}>{'|'.join(phrase.removeprefix(_BOUNDARY) for phrase in phrases)})"
        for number, phrases in enumerate(KINDS.values())
    )
    + ")"
)


def _kind(text: str) -> str | None:
    found = _NOTICE.search(text)
    return None if found is None else _KIND_OF[found.lastgroup or ""]


def says_notice(block: str) -> bool:
    """Whether a normalised block holds a notice's stock phrase: a cookie banner's, a paywall
    box's, an error page's (:mod:`.roundup` asks it of a listing's items)."""
    return _kind(block) is not None


def notice_kind(blocks: Sequence[str]) -> str | None:
    """The kind of notice a page is (a key of :data:`KINDS`), or None when it is not one.

    ``blocks`` are what the page's chrome and its site's boilerplate leave, normalised
    (:func:`.text.normalize_blocks`); more than :data:`MAX_WORDS` words are no notice. A block that
    holds a stock phrase is the notice; the others are the rest, at most :data:`ROOM` words, or
    :data:`OVERLAY_ROOM` when every notice block is of a kind in :data:`OVERLAYS`. The kind is the
    first notice block's."""
    if sum(block.count(" ") + 1 for block in blocks) > MAX_WORDS:
        return None
    kinds: list[str] = []
    rest = 0
    for block in blocks:
        kind = _kind(block)
        if kind is None:
            rest += block.count(" ") + 1
            if rest > ROOM:
                return None
        else:
            kinds.append(kind)
    if not kinds or (rest > OVERLAY_ROOM and OVERLAYS.issuperset(kinds)):
        return None
    return kinds[0]
