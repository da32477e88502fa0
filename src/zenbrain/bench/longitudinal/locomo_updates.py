"""Update pairs found in the LoCoMo development conversations (ids and questions only).

Each entry: the conversation, the turns that state the older value (``stale``), the turns
that state what replaced it (``current``, in a later session), and a question whose answer
is the current value. The dialogue itself stays in the data file.

How they were found (reproducible with ``scripts/locomo_update_candidates.py``):

1. every turn matching a change cue (moved to, new job, lost my job, started, switched,
   no longer, used to, now I, currently, finally, passed, opening, rejection, ...) and every
   question of the data asking for a current state ("currently", "now", "new", "still") was
   listed with its speaker and session;
2. for each, the earlier sessions of the same speaker were searched for a statement of the
   same attribute (the same job, plan, project or activity);
3. a pair was kept only when reading both turns shows the later one makes the earlier one
   no longer current; the question asks for the current state in the speaker's terms.

The five development conversations contain few such clean changes (people in them mostly
add events rather than revise facts); five were kept. Candidates dropped on reading:
the later turn was about another object (a second script), repeated the earlier state
("still searching"), or the change happened inside one session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..locomo import LocomoConversation
from .timeline import Probe

__all__ = ["LOCOMO_UPDATE_PAIRS", "LocomoUpdatePair", "locomo_update_probes"]


@dataclass(frozen=True)
class LocomoUpdatePair:
    sample_id: str
    stale: tuple[str, ...]
    current: tuple[str, ...]
    question: str
    note: str  # what changed, in a few words (not the dialogue)


LOCOMO_UPDATE_PAIRS: tuple[LocomoUpdatePair, ...] = (
    LocomoUpdatePair("conv-26", ("D2:8", "D13:1"), ("D19:1",),
                     "How far along is Caroline in her adoption process now?",
                     "researching agencies -> applied -> passed the agency interviews"),
    LocomoUpdatePair("conv-30", ("D2:4", "D4:9"), ("D15:5",),
                     "Where does Jon stand with opening his dance studio?",
                     "still searching for a location -> official opening night"),
    LocomoUpdatePair("conv-41", ("D19:8",), ("D28:1", "D28:5"),
                     "What is John's work situation now?",
                     "promoted to assistant manager -> lost that job, found one at a tech company"),
    LocomoUpdatePair("conv-42", ("D23:17",), ("D27:23",),
                     "What game is Nate playing these days?",
                     "a futuristic game played nonstop -> currently playing Xenoblade Chronicles"),
    LocomoUpdatePair("conv-42", ("D3:1",), ("D14:1",),
                     "What came of the screenplay Joanna sent out?",
                     "waiting to hear from the festival -> rejection letter"),
)


def locomo_update_probes(conv: LocomoConversation, pairs: Sequence[LocomoUpdatePair] = LOCOMO_UPDATE_PAIRS) -> list[Probe]:
    """One end probe (checkpoint ``update``) per curated pair of the conversation."""
    ids = {d.id for d in conv.docs}
    probes = []
    for i, p in enumerate(pr for pr in pairs if pr.sample_id == conv.sample_id):
        missing = [x for x in (*p.stale, *p.current) if conv.id_prefix + x not in ids]
        if missing:
            raise ValueError(f"update pair of {p.sample_id} names turns that do not exist: {missing}")
        current = tuple(conv.id_prefix + x for x in p.current)
        stale = tuple(conv.id_prefix + x for x in p.stale)
        probes.append(Probe(f"{conv.sample_id}/u{i}", p.question, current, "update", None, "locomo-update",
                            {"current_ids": list(current), "stale_ids": list(stale), "sample_id": conv.sample_id}))
    return probes
