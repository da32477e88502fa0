"""An extractor that needs no model: English first-person patterns, zenbrain's own
classifiers and emotional tagging.

What it finds, in what the *user* says (assistant turns are context, not facts about
the user), sentence by sentence:

* identity -- "my name is ...", "call me ...", "I live in / moved to / am based in ...",
  "I work as / at / for ...", "I was born in/on ...", "my birthday is ...", "I'm N years
  old", "my wife/son/dog ... is (called) ..."; each names a *slot* (name, residence,
  job, ...), so "I moved to Paris" supersedes a stored "I live in Berlin";
* preferences -- "I love / like / enjoy / prefer / hate / dislike / can't stand / don't
  like ...", "my favorite X is Y" (slot ``favorite:X``);
* plans -- "I'm going to / I will / I'll / I plan to / I need to ... <when>", and
  "remind me to X when Y" (a cue): with a time ("tomorrow at 6pm", "next week", "on
  Friday", "in 3 days", "on 8 May 2025") or a cue they also become intentions;
* procedures -- a turn that :func:`zenbrain.layers.routing.classify_kind` calls a skill
  (numbered steps, "first ... then ...", "to deploy ...");
* other facts -- "my X is Y" (slot ``my:X``), "I have ...", and first-person sentences
  that emotional tagging finds significant ("I was devastated when ...") and that are not
  addressed to the other speaker ("I'm so proud of you" is about them).

Against what is stored it ignores a statement whose words nearly equal a related memory's
(Jaccard >= ``duplicate_jaccard``) and updates a related memory of the same slot and speaker.

What it cannot do (use :class:`~zenbrain.ingest.llm.LLMExtractor` for these): understand
negation or change of mind beyond slots ("I don't live there any more", "actually I
prefer tea now" keeps both preferences), resolve pronouns or references ("she", "that
place", "the same as last year"), read facts said in the third person or by the
assistant, paraphrase into canonical facts (it stores the sentence as said), handle
languages other than English, or know time zones (times are UTC).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..layers.routing import classify_kind
from ..mechanisms import emotional
from ..model import Kind, MemoryItem
from ..text import jaccard, token_set
from .base import Decision, Extraction
from .messages import Turn
from .when import resolve_when

__all__ = ["RuleExtractor"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# A new first-person clause inside a sentence: "My name is Alice and I live in Lyon".
_CLAUSE = re.compile(r",?\s+(?:and|but|;)\s+(?=(?:i|i'm|i've|my)\b)|;\s*", re.IGNORECASE)
_VALUE = r"([^,.;!?]+?)"
_END = r"(?=\s*(?:[,.;!?]|$| and | but | because | since | so ))"


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# (slot, pattern): the first group is the value; slots with "{1}" take their name from group 1.
_IDENTITY: list[tuple[str, re.Pattern[str]]] = [
    ("name", _rx(r"\b(?:my name is|call me|i'm called|i am called)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)")),
    ("residence", _rx(r"\b(?:i live in|i'm living in|i am living in|i moved to|i've moved to|i have moved to|"
                      r"i relocated to|i'm based in|i am based in)\s+" + _VALUE + _END)),
    ("job", _rx(r"\bi work as\s+(?:an? )?" + _VALUE + _END)),
    ("employer", _rx(r"\bi work (?:at|for)\s+" + _VALUE + _END)),
    ("birthplace", _rx(r"\bi was born in\s+" + _VALUE + _END)),
    ("birthday", _rx(r"\b(?:my birthday is(?: on)?|i was born on)\s+" + _VALUE + _END)),
    ("age", _rx(r"\bi(?:'m| am) (\d{1,3}) (?:years old|yo)\b")),
    ("{1}", _rx(r"\bmy (wife|husband|partner|boyfriend|girlfriend|son|daughter|mother|mom|father|dad|brother|"
                r"sister|dog|cat)(?:'s name)? is (?:called |named )?([A-Z][\w'-]*)")),
]
_FAVORITE = _rx(r"\bmy (?:absolute )?favou?rite ([a-z ]{2,30}?) is\s+" + _VALUE + _END)
_PREFERENCE = _rx(r"\bi (?:really |absolutely |just |kind of |kinda )?(?:love|like|enjoy|prefer|adore|hate|dislike|"
                  r"detest|can't stand|cannot stand|don't like|do not like)\b")
_REMIND = _rx(r"\bremind me to (.+?)(?: (?:when|whenever|if|next time) (.+?))?[.!?]?$")
_CUE_FIRST = _rx(r"\b(?:when|whenever|next time) (.+?),? remind me to (.+?)[.!?]?$")
_PLAN = _rx(r"\b(?:i'm going to|i am going to|i'm gonna|i will|i'll|i plan to|i'm planning to|i am planning to|"
            r"i intend to|i need to|i have to|i must|i'm flying to|i'm travelling to|i'm traveling to|i'm visiting)\b")
# "my car is a red Tesla" names a value; "my kids are so excited" does not.
_MY_X_IS = _rx(r"\bmy ([a-z]+(?: [a-z]+)?) is (?!(?:so|very|really|pretty|super|too|quite|just|always|never|not)\b)"
               + _VALUE + _END)
_ADDRESSED = _rx(r"\b(?:you|your|you're|you've)\b")
_I_HAVE = _rx(r"\bi (?:have|own|got) (?:a|an|two|three|four|\d+) ")
_FIRST_PERSON = _rx(r"\b(?:i|i'm|i've|i'd|my|me)\b")
_HYPOTHETICAL = _rx(r"^\s*(?:if|what if|suppose|imagine|maybe)\b|\b(?:would|could|might) (?:i|you)\b")
_SECOND_PERSON_Q = _rx(r"\b(?:can|could|would|will) you\b")
# "my X is" nouns that are never a single-valued slot.
_NOT_SLOTS = frozenset({"guess", "question", "point", "bad", "pleasure", "concern", "problem", "issue", "hope"})


@dataclass(frozen=True)
class _Candidate:
    type: str
    text: str
    turn: Turn
    slot: str | None = None
    due_at: float | None = None
    cue: str | None = None


_CUE_SUBJECT = re.compile(r"^(?:i|i'm|i am|we|we're)\s+", re.IGNORECASE)


def _cue(text: str) -> str | None:
    """The words of a cue that can come up in a later query ("when I pack" -> "pack")."""
    return _CUE_SUBJECT.sub("", text.strip()).strip() or None


def _decide(action: str, c: _Candidate, *, target_id: str | None = None, reason: str = "") -> Decision:
    return Decision(action, c.type, c.text, c.turn.index, target_id, c.due_at, c.cue, c.slot, reason)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


class RuleExtractor:
    """The offline extractor (see the module docstring for what it finds and cannot do).

    ``roles`` are the roles whose turns it reads; ``significance`` is the emotional
    significance from which a first-person sentence counts as a fact worth keeping.
    """

    name = "rules"

    def __init__(self, *, roles: Sequence[str] = ("user",), duplicate_jaccard: float = 0.8,
                 significance: float = 0.5) -> None:
        self.roles = frozenset(roles)
        self.duplicate_jaccard = float(duplicate_jaccard)
        self.significance = float(significance)

    # ------------------------------------------------------------------ finding
    def candidates(self, turns: Sequence[Turn], *, now: float) -> list[_Candidate]:
        out: list[_Candidate] = []
        for turn in turns:
            if turn.role not in self.roles or not turn.text:
                continue
            if classify_kind(turn.text) is Kind.SKILL and len(_sentences(turn.text)) > 1:
                out.append(_Candidate("procedure", turn.text, turn))
                continue
            ref = turn.timestamp if turn.timestamp is not None else now
            for sentence in _sentences(turn.text):
                clauses = [c.strip() for c in _CLAUSE.split(sentence) if c and c.strip()]
                if len(clauses) > 1 and not sentence.rstrip().endswith("?"):
                    clauses = [c[0].upper() + c[1:] for c in clauses]
                else:
                    clauses = [sentence]
                for clause in clauses:
                    c = self._sentence(clause, turn, ref)
                    if c is not None:
                        out.append(c)
        return out

    def _sentence(self, s: str, turn: Turn, ref: float) -> _Candidate | None:
        asks = s.endswith("?") or _HYPOTHETICAL.search(s) or _SECOND_PERSON_Q.search(s)
        if asks and not (_REMIND.search(s) or _CUE_FIRST.search(s)):
            return None
        text = s.rstrip()
        for slot, rx in _IDENTITY:
            m = rx.search(s)
            if m:
                name = m.group(1).lower() if slot == "{1}" else slot
                return _Candidate("identity", text, turn, slot=name if slot != "{1}" else f"family:{name}")
        m = _CUE_FIRST.search(s)
        if m:
            return _Candidate("plan", text, turn, cue=_cue(m.group(1)), due_at=resolve_when(s, ref))
        m = _REMIND.search(s)
        if m:
            due = resolve_when(s, ref)
            return _Candidate("plan", text, turn, cue=_cue(m.group(2)) if m.group(2) else None, due_at=due)
        m = _FAVORITE.search(s)
        if m:
            return _Candidate("preference", text, turn, slot=f"favorite:{' '.join(m.group(1).split())}")
        if _PREFERENCE.search(s):
            return _Candidate("preference", text, turn)
        if _PLAN.search(s):
            return _Candidate("plan", text, turn, due_at=resolve_when(s, ref))
        m = _MY_X_IS.search(s)
        if m and m.group(1).split()[-1] not in _NOT_SLOTS:
            return _Candidate("fact", text, turn, slot=f"my:{m.group(1)}")
        if _I_HAVE.search(s):
            return _Candidate("fact", text, turn)
        if _FIRST_PERSON.search(s) and not _ADDRESSED.search(s) and len(s.split()) >= 4:
            tag = emotional.tag(s)
            if tag.significance >= self.significance or tag.intensity >= self.significance:
                return _Candidate("fact", text, turn)
        return None

    def queries(self, turns: Sequence[Turn]) -> list[str]:
        """The statements to compare with stored memories: only what may become one."""
        return [c.text for c in self.candidates(turns, now=0.0)]

    # ------------------------------------------------------------------ deciding
    def extract(self, turns: Sequence[Turn], related: Sequence[MemoryItem], *, now: float) -> Extraction:
        found = self.candidates(turns, now=now)
        # Within the conversation the last value of a slot wins; exact repeats count once.
        last_of_slot = {(c.slot, c.turn.speaker): i for i, c in enumerate(found) if c.slot}
        seen_texts: set[str] = set()
        stored = [(m, token_set(m.content)) for m in related]
        decisions: list[Decision] = []
        for i, c in enumerate(found):
            key = c.text.lower()
            if key in seen_texts:
                decisions.append(_decide("ignore", c, reason="said twice in this conversation"))
                continue
            seen_texts.add(key)
            if c.slot and last_of_slot[(c.slot, c.turn.speaker)] != i:
                decisions.append(_decide("ignore", c, reason="superseded later in this conversation"))
                continue
            toks = token_set(c.text)
            dup = next((m for m, t in stored if jaccard(toks, t) >= self.duplicate_jaccard), None)
            if dup is not None:
                decisions.append(_decide("ignore", c, target_id=dup.id, reason="already stored"))
                continue
            same_slot = None
            if c.slot:
                same_slot = next((m for m in related if m.metadata.get("slot") == c.slot
                                  and m.metadata.get("speaker", c.turn.speaker) == c.turn.speaker), None)
            if same_slot is not None:
                decisions.append(_decide("update", c, target_id=same_slot.id, reason=f"new value of {c.slot}"))
            else:
                decisions.append(_decide("add", c))
        return Extraction(decisions)
