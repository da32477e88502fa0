"""Which LoCoMo turns are low-value chatter: one documented, mechanical rule.

A turn is **low-value** when all of these hold:

1. it is evidence of no question of its conversation;
2. it has at most ``MAX_WORDS`` (20) words, speaker prefix and image caption excluded;
3. it names no one and nothing: ``zenbrain.text.entities`` finds no capitalised name in it
   other than the conversation's two speakers;
4. it holds no digit and no date or time word (month and weekday names, yesterday,
   tomorrow, tonight, today, week, weekend, month, year, ago);
5. it shares no image.

On the five development conversations this keeps 508 of 2,760 turns: greetings,
thanks, praise and follow-up questions ("Wow, that's awesome! Can't wait to hear it!").
The rule reads the raw turn (``turn_text``), never zenbrain's state, so every system is
judged against the same set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...text import entities
from ..base import Doc
from ..locomo import LocomoConversation

__all__ = ["MAX_WORDS", "is_low_value", "low_value_ids", "turn_text"]

MAX_WORDS = 20
_DATE_WORDS = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|yesterday|tomorrow|tonight|today|week|weekend|month|year|ago)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


def turn_text(doc: Doc) -> str:
    """The words of a turn without the speaker prefix and the shared image's caption."""
    text = doc.text
    if doc.speaker and text.startswith(f"{doc.speaker}: "):
        text = text[len(doc.speaker) + 2 :]
    cut = text.find(" [shares ")
    return text[:cut] if cut >= 0 else text


def is_low_value(doc: Doc, *, evidence: set[str], speakers: Iterable[str]) -> bool:
    if doc.id in evidence:
        return False
    if doc.metadata.get("blip_caption") or doc.metadata.get("img_url"):
        return False
    text = turn_text(doc)
    if len(text.split()) > MAX_WORDS:
        return False
    if _DIGIT.search(text) or _DATE_WORDS.search(text):
        return False
    own = {s.lower() for s in speakers}
    return not [e for e in entities(text) if e not in own]


def low_value_ids(conv: LocomoConversation) -> set[str]:
    """Ids of the conversation's low-value turns (the rule above)."""
    evidence = {e for q in conv.questions for e in q.evidence}
    return {d.id for d in conv.docs if is_low_value(d, evidence=evidence, speakers=conv.speakers)}
