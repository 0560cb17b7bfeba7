"""Outlets: their localised chrome, site prose and networks; stories, events and page drafts."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .language import LANGUAGE_WEIGHTS

# --- Outlets ------------------------------------------------------------------------------------

#: Outlets in a small corpus; larger corpora get one more outlet per PAGES_PER_OUTLET pages.
MIN_OUTLETS = 30
PAGES_PER_OUTLET = 400
#: Every language gets at least this many outlets, so a wire story can have two copies.
MIN_OUTLETS_PER_LANGUAGE = 2
#: Site-wide prose per outlet: paragraphs, and tokens per paragraph (inclusive).
SITE_PROSE_PARAGRAPHS = (2, 4)
SITE_PROSE_TOKENS = (30, 70)
#: Networks per MIN_OUTLETS outlets, and outlets per network: about a third of outlets share prose.
NETWORKS = (3, 4)
NETWORK_SIZE = (2, 4)
#: Section links in the nav bar (inclusive).
NAV_LINKS = (6, 10)
#: Headlines in the "Most read"/"Latest" box, and "Related:" lines in text pages (inclusive).
SIDEBAR_HEADLINES = (5, 8)
RELATED_LINES = (1, 3)
#: Ads per HTML page (inclusive).
ADS_PER_PAGE = (1, 3)
#: Per-outlet chance range that an article paragraph carries an inline link.
INLINE_LINK_CHANCE = (0.0, 0.3)
#: Old headlines per outlet that fill its sidebar before it has published enough in the window.
ARCHIVE_HEADLINES = 10
#: How many of an outlet's latest pages its sidebar draws from.
RECENT_HEADLINES = 20
#: Bylines per outlet.
STAFF_PER_OUTLET = 6
#: Advertised brands in the whole world.
BRANDS = 40


# --- Localised chrome ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ui:
    """Fixed interface strings of one language: headings, sections, footer links, ad templates."""

    most_read: str
    latest: str
    by: str
    related: str
    photos: str
    video: str
    advert: str
    rights: str
    footer_links: tuple[str, ...]
    sections: tuple[tuple[str, str], ...]
    ads: tuple[str, ...]
    outlet_names: tuple[str, ...]
    tlds: tuple[str, ...]
    read_more: tuple[str, ...]  # the link line closing a teaser; each outlet uses one of them


def _sections(text: str) -> tuple[tuple[str, str], ...]:
    pairs = (item.split("=") for item in text.split(","))
    return tuple((slug.strip(), label.strip()) for slug, label in pairs)


_UI: Mapping[str, _Ui] = {
    "en": _Ui(
        "Most read",
        "Latest",
        "By",
        "Related",
        "Photos",
        "Video",
        "Advertisement",
        "All rights reserved",
        ("About us", "Contact", "Privacy policy", "Terms of use", "Advertise", "Careers"),
        _sections(
            "world=World,politics=Politics,business=Business,sport=Sport,culture=Culture,"
            "science=Science,health=Health,technology=Technology,opinion=Opinion,local=Local"
        ),
        ("Buy {} today", "50% off {}", "{}: free delivery this week", "Try {} now", "{} - save 30%"),
        ("The {} Post", "The {} Times", "{} Herald", "{} Daily", "The {} Chronicle", "{} Gazette"),
        (".com", ".com", ".co.uk", ".news"),
        ("Read more", "Continue reading", "Full story"),
    ),
    "es": _Ui(
        "Lo más leído",
        "Últimas noticias",
        "Por",
        "Relacionado",
        "Fotos",
        "Vídeo",
        "Publicidad",
        "Todos los derechos reservados",
        ("Quiénes somos", "Contacto", "Privacidad", "Aviso legal", "Publicidad", "Empleo"),
        _sections(
            "internacional=Internacional,politica=Política,economia=Economía,deportes=Deportes,"
            "cultura=Cultura,ciencia=Ciencia,salud=Salud,tecnologia=Tecnología,"
            "opinion=Opinión,local=Local"
        ),
        ("Compra {} hoy", "50% de descuento en {}", "{}: envío gratis", "Prueba {} ya"),
        ("Diario {}", "El {}", "Noticias {}", "Crónica {}"),
        (".es", ".es", ".com.mx", ".com"),
        ("Leer más", "Seguir leyendo", "Noticia completa"),
    ),
    "fr": _Ui(
        "Les plus lus",
        "À la une",
        "Par",
        "À lire aussi",
        "Photos",
        "Vidéo",
        "Publicité",
        "Tous droits réservés",
        ("Qui sommes-nous", "Contact", "Confidentialité", "Mentions légales", "Publicité", "Recrutement"),
        _sections(
            "monde=Monde,politique=Politique,economie=Économie,sport=Sport,culture=Culture,"
            "sciences=Sciences,sante=Santé,tech=Tech,opinions=Opinions,region=Région"
        ),
        ("Achetez {} aujourd'hui", "-50% sur {}", "{} : livraison offerte", "Essayez {}"),
        ("Le {}", "{} Matin", "La Gazette {}", "L'Écho {}"),
        (".fr", ".fr", ".be", ".ch"),
        ("Lire la suite", "Lire l'article", "En savoir plus"),
    ),
    "de": _Ui(
        "Meistgelesen",
        "Neueste Artikel",
        "Von",
        "Mehr zum Thema",
        "Fotos",
        "Video",
        "Anzeige",
        "Alle Rechte vorbehalten",
        ("Über uns", "Kontakt", "Datenschutz", "Impressum", "Werbung", "Karriere"),
        _sections(
            "welt=Welt,politik=Politik,wirtschaft=Wirtschaft,sport=Sport,kultur=Kultur,"
            "wissen=Wissen,gesundheit=Gesundheit,digital=Digital,meinung=Meinung,region=Region"
        ),
        ("Jetzt {} kaufen", "50% Rabatt auf {}", "{}: Versand gratis", "{} testen"),
        ("{} Zeitung", "{} Rundschau", "{} Kurier", "{} Allgemeine"),
        (".de", ".de", ".at", ".ch"),
        ("Weiterlesen", "Mehr lesen", "Zum Artikel"),
    ),
    "it": _Ui(
        "I più letti",
        "Ultime notizie",
        "Di",
        "Leggi anche",
        "Foto",
        "Video",
        "Pubblicità",
        "Tutti i diritti riservati",
        ("Chi siamo", "Contatti", "Privacy", "Note legali", "Pubblicità", "Lavora con noi"),
        _sections(
            "esteri=Esteri,politica=Politica,economia=Economia,sport=Sport,cultura=Cultura,"
            "scienza=Scienza,salute=Salute,tecnologia=Tecnologia,opinioni=Opinioni,"
            "cronaca=Cronaca"
        ),
        ("Compra {} oggi", "Sconto 50% su {}", "{}: spedizione gratuita", "Prova {} subito"),
        ("Il {}", "Corriere {}", "La Gazzetta {}", "{} Oggi"),
        (".it",),
        ("Leggi di più", "Continua a leggere", "Leggi tutto"),
    ),
    "pt": _Ui(
        "Mais lidas",
        "Últimas",
        "Por",
        "Leia também",
        "Fotos",
        "Vídeo",
        "Publicidade",
        "Todos os direitos reservados",
        ("Quem somos", "Contato", "Privacidade", "Termos de uso", "Anuncie", "Carreiras"),
        _sections(
            "mundo=Mundo,politica=Política,economia=Economia,desporto=Desporto,cultura=Cultura,"
            "ciencia=Ciência,saude=Saúde,tecnologia=Tecnologia,opiniao=Opinião,local=Local"
        ),
        ("Compre {} hoje", "50% de desconto em {}", "{}: frete grátis", "Experimente {}"),
        ("Jornal {}", "O {}", "Diário {}", "Folha {}"),
        (".pt", ".com.br", ".com.br"),
        ("Leia mais", "Continue lendo", "Ler mais"),
    ),
    "nl": _Ui(
        "Meest gelezen",
        "Laatste nieuws",
        "Door",
        "Lees ook",
        "Foto's",
        "Video",
        "Advertentie",
        "Alle rechten voorbehouden",
        ("Over ons", "Contact", "Privacy", "Voorwaarden", "Adverteren", "Vacatures"),
        _sections(
            "buitenland=Buitenland,politiek=Politiek,economie=Economie,sport=Sport,"
            "cultuur=Cultuur,wetenschap=Wetenschap,gezondheid=Gezondheid,tech=Tech,"
            "opinie=Opinie,regio=Regio"
        ),
        ("Koop {} vandaag", "50% korting op {}", "{}: gratis bezorging", "Probeer {} nu"),
        ("De {}", "{} Dagblad", "Het {} Nieuws", "{} Courant"),
        (".nl", ".nl", ".be"),
        ("Lees meer", "Verder lezen", "Lees verder"),
    ),
    "ru": _Ui(
        "Самое читаемое",
        "Последние новости",
        "Автор:",
        "Читайте также",
        "Фото",
        "Видео",
        "Реклама",
        "Все права защищены",
        ("О нас", "Контакты", "Конфиденциальность", "Правила", "Реклама", "Вакансии"),
        _sections(
            "mir=Мир,politika=Политика,ekonomika=Экономика,sport=Спорт,kultura=Культура,"
            "nauka=Наука,zdorovie=Здоровье,tekhnologii=Технологии,mnenie=Мнения,region=Регион"
        ),
        ("Купите {} сегодня", "Скидка 50% на {}", "{}: бесплатная доставка", "Попробуйте {}"),
        ("{} Вести", "Новости {}", "{} Правда", "Вечерний {}"),
        (".ru",),
        ("Читать далее", "Подробнее", "Читать полностью"),
    ),
}
_DOMAIN_SUFFIXES = ("", "", "news", "24", "online")  # generic: they must not contradict the outlet's name
_AD_NETWORKS = ("adzerra.net", "clickvana.com", "promoloop.io", "bannerkit.net")


def _ad_network(outlet: _Outlet) -> str:
    """The ad network an outlet's pages load their tag from (fixed per outlet)."""
    return _AD_NETWORKS[len(outlet.domain) % len(_AD_NETWORKS)]


def _read_more(outlet: _Outlet) -> str:
    """The line an outlet's teasers end with, linking to the full story (fixed per outlet, drawn
    from nothing so that outlets come out as they did before teasers existed)."""
    choices = _UI[outlet.lang].read_more
    return choices[len(outlet.domain) % len(choices)]


# --- Outlets ------------------------------------------------------------------------------------


@dataclass
class _Outlet:
    """One news site: its language, chrome, site-wide prose and recent headlines."""

    domain: str
    lang: str
    name: str
    sections: tuple[tuple[str, str], ...]
    prose: tuple[str, ...]
    staff: tuple[str, ...]
    nav_tag: str  # "nav" or "menu"
    sidebar_tag: str  # "aside" or "sidebar"
    sidebar_latest: bool  # "Latest" in publication order, else "Most read" in any order
    article_tag: str  # "article" or "story-body"
    prose_place: str  # "newsletter" (in the article container), "site-footer" or "footer"
    ad_class: str
    link_chance: float
    text_has_title: bool
    body_script: str
    next_number: int
    archive: list[tuple[str, str]] = field(default_factory=list)  # (title, url)
    recent: deque[Any] = field(default_factory=lambda: deque(maxlen=RECENT_HEADLINES))  # (title, url)


@dataclass(frozen=True)
class _Draft:
    """A page before rendering: who publishes what, when."""

    when: int  # seconds after EPOCH
    seq: int  # creation order, breaks ties in time
    outlet: _Outlet
    label: str
    kind: str
    event: str | None
    title: tuple[str, ...]  # tokens, entity names capitalised
    paragraphs: tuple[str, ...]
    entities: tuple[str, ...]
    excerpt_of: int | None = None  # a teaser: the seq of the draft whose text it excerpts
    more: str | None = None  # a teaser: its "Read more" line, which links to that draft's page
    quoted: str | None = None  # a quoting page: the label of the story it quotes
    spreading: bool = False  # a copy of a story that spreads (see .spreading)


@dataclass(frozen=True)
class _Story:
    label: str
    lang: str
    wire: bool
    start: int
    title: tuple[str, ...]
    sentences: tuple[tuple[int, str], ...]  # (paragraph number, sentence)
    entities: tuple[str, ...]
    event: str | None


@dataclass(frozen=True)
class _Event:
    label: str
    lang: str
    start: int
    entities: tuple[str, ...]
    title_words: tuple[str, ...]


def _language_weights(languages: Sequence[str]) -> list[float]:
    return [LANGUAGE_WEIGHTS[code] for code in languages]


def _outlet_counts(total: int, languages: Sequence[str]) -> dict[str, int]:
    """Outlets per language in proportion to story share, at least MIN_OUTLETS_PER_LANGUAGE each."""
    weights = _language_weights(languages)
    scale = sum(weights)
    counts = {
        code: max(MIN_OUTLETS_PER_LANGUAGE, round(total * weight / scale))
        for code, weight in zip(languages, weights, strict=True)
    }
    biggest = max(languages, key=lambda code: (counts[code], -languages.index(code)))
    counts[biggest] = max(MIN_OUTLETS_PER_LANGUAGE, counts[biggest] + total - sum(counts.values()))
    return counts
