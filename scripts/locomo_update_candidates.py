"""List candidate update pairs in LoCoMo: step 1 of the procedure in bench/longitudinal/locomo_updates.py.

Prints every turn that carries a change cue and every question that asks for a current
state, each with its speaker's earlier turns that share a content word with it (the
attribute it may revise). Reading both decides whether a pair is kept (step 3).

    python scripts/locomo_update_candidates.py [--data PATH] [--conversation conv-41]
"""

from __future__ import annotations

import argparse
import re

from zenbrain.bench.locomo import load_locomo, resolve_data_file
from zenbrain.bench.longitudinal.locomo_timeline import session_of
from zenbrain.bench.longitudinal.lowvalue import turn_text

CUES = re.compile(
    r"\b(moved to|moving to|new job|new position|started (?:a |my )?(?:new )?(?:job|working)|got (?:a|the) job|"
    r"lost my job|quit|resigned|left my job|switched|no longer|not anymore|anymore|used to|now i|i now|instead|"
    r"promoted|got hired|laid off|broke up|engaged|married|new place|new apartment|new house|relocat\w*|"
    r"currently|finally|passed|opening|rejection|accepted)\b",
    re.IGNORECASE,
)
QUESTION_CUES = re.compile(r"\b(now|currently|current|new|still|anymore|these days)\b", re.IGNORECASE)
STOP = frozenset("the a an and or but to of in on at for with my i you it is was be been have has had that this "
                 "so just really very what how when where who me we our your his her their about from".split())


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in STOP}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None)
    ap.add_argument("--conversation", default=None)
    ap.add_argument("--earlier", type=int, default=3, help="earlier turns shown per candidate")
    args = ap.parse_args()
    convs = load_locomo(resolve_data_file(args.data, ("locomo_dev.json", "locomo10.json")))
    for c in convs:
        if args.conversation and c.sample_id != args.conversation:
            continue
        print(f"=== {c.sample_id}")
        for d in c.docs:
            if not CUES.search(turn_text(d)):
                continue
            n = session_of(d.id) or 0
            mine = words(turn_text(d))
            earlier = [e for e in c.docs if e.speaker == d.speaker and (session_of(e.id) or 0) < n]
            earlier.sort(key=lambda e: -len(words(turn_text(e)) & mine))
            print(f"{d.id} {d.text[:160]}")
            for e in earlier[: args.earlier]:
                if words(turn_text(e)) & mine:
                    print(f"    earlier {e.id}: {e.text[:140]}")
        for q in c.questions:
            if q.evidence and QUESTION_CUES.search(q.question):
                print(f"question {q.qid}: {q.question} -> {q.answer} {list(q.evidence)}")


if __name__ == "__main__":
    main()
