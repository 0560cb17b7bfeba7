"""What a site shows in place of an article, per language: the ``notices`` shape's pages.

A crawler reaches a story's address and gets the site's error page, a bot check, a paywall stub or
a removal notice instead. Each site words them once, so all its notices of one kind are the same
text (a bot check adds its own reference number), wrapped in the site's chrome. Each is labelled
a page of its own, as the outside evaluation sets label them: they carry no story.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["NOTICE_KINDS", "NOTICE_SHARE", "notice_text"]

#: With ``notices``, this share of pages are notices (in place of the 1% of galleries).
NOTICE_SHARE = 0.05
NOTICE_KINDS = ("not_found", "bot_check", "paywall", "removed")

# kind -> language -> (title, lines); a bot check's "{ref}" is its reference number
_TEXTS: Mapping[str, Mapping[str, tuple[str, tuple[str, ...]]]] = MappingProxyType(
    {
        "not_found": {
            "en": ("Page not found", ("Sorry, we can't find that page.", "Go to the homepage")),
            "es": (
                "Página no encontrada",
                ("Lo sentimos, la página que busca no existe.", "Volver a la portada"),
            ),
            "fr": (
                "Page introuvable",
                ("Désolé, cette page n'existe pas ou a été déplacée.", "Retour à l'accueil"),
            ),
            "de": (
                "Seite nicht gefunden",
                ("Die gewünschte Seite existiert leider nicht.", "Zur Startseite"),
            ),
            "it": ("Pagina non trovata", ("Spiacenti, la pagina richiesta non esiste.", "Torna alla home")),
            "pt": (
                "Página não encontrada",
                ("Desculpe, a página que procura não existe.", "Voltar à página inicial"),
            ),
            "nl": ("Pagina niet gevonden", ("Sorry, deze pagina bestaat niet (meer).", "Naar de voorpagina")),
            "ru": ("Страница не найдена", ("Запрошенная страница не существует.", "На главную")),
        },
        "bot_check": {
            "en": ("Access check", ("Please verify you are a human.", "Reference ID: {ref}")),
            "es": (
                "Acceso denegado",
                ("Verifique que no es un robot para continuar.", "ID de referencia: {ref}"),
            ),
            "fr": ("Accès refusé", ("Veuillez confirmer que vous n'êtes pas un robot.", "Référence : {ref}")),
            "de": (
                "Zugriff verweigert",
                ("Bitte bestätigen Sie, dass Sie kein Roboter sind.", "Referenz: {ref}"),
            ),
            "it": (
                "Accesso negato",
                ("Conferma di non essere un robot per continuare.", "Riferimento: {ref}"),
            ),
            "pt": ("Acesso negado", ("Confirme que não é um robô para continuar.", "Referência: {ref}")),
            "nl": ("Toegang geweigerd", ("Bevestig dat u geen robot bent.", "Referentie: {ref}")),
            "ru": ("Доступ запрещен", ("Подтвердите, что вы не робот.", "Код: {ref}")),
        },
        "paywall": {
            "en": ("Subscriber exclusive", ("This article is available to subscribers only.", "Subscribe")),
            "es": ("Exclusivo", ("Este artículo es exclusivo para suscriptores.", "Suscríbete")),
            "fr": ("Abonnés", ("Cet article est réservé aux abonnés.", "Je m'abonne")),
            "de": ("Plus", ("Dieser Artikel ist nur für Abonnenten.", "Jetzt abonnieren")),
            "it": ("Abbonati", ("Questo articolo è riservato agli abbonati.", "Abbonati ora")),
            "pt": ("Exclusivo", ("Este artigo é exclusivo para assinantes.", "Assine já")),
            "nl": ("Plus", ("Dit artikel is alleen voor abonnees.", "Word abonnee")),
            "ru": ("Подписка", ("Этот материал доступен только для подписчиков.", "Оформить подписку")),
        },
        "removed": {
            "en": ("Not available", ("This content has been removed at the request of the publisher.",)),
            "es": ("No disponible", ("Este contenido ya no está disponible.",)),
            "fr": ("Indisponible", ("Ce contenu n'est plus disponible.",)),
            "de": ("Nicht verfügbar", ("Dieser Inhalt ist nicht mehr verfügbar.",)),
            "it": ("Non disponibile", ("Questo contenuto non è più disponibile.",)),
            "pt": ("Indisponível", ("Este conteúdo não está mais disponível.",)),
            "nl": ("Niet beschikbaar", ("Deze inhoud is niet meer beschikbaar.",)),
            "ru": ("Недоступно", ("Этот материал был удален по просьбе издателя.",)),
        },
    }
)


def notice_text(kind: str, lang: str, ref: str) -> tuple[str, tuple[str, ...]]:
    """A site's notice of ``kind`` in ``lang``: its title and its lines (English for a language
    without its own wording)."""
    texts = _TEXTS[kind]
    title, lines = texts.get(lang, texts["en"])
    return title, tuple(line.format(ref=ref) for line in lines)
