"""Emotional tagging of memory content (English), deterministic and offline.

A curated lexicon gives each affect word a valence in [-1, 1] and an arousal in [0, 1];
a second list gives significance weights in [0, 1] ("deadline", "allergic", "wedding",
"password", ...). Rules on top of the lexicon:

* negation ("not", "never", "n't", ... up to three tokens before) flips and halves a
  word's valence, damps its arousal, and cancels its significance ("not important");
* intensifiers ("very", "extremely", ...) scale the next affect word by 1.3 and add 0.1
  arousal; dampeners ("slightly", "kind of", ...) scale it by 0.6;
* after the last "but" valence counts 1.5x, before it 0.5x (the clause after "but" wins);
* an ALL-CAPS affect word counts 1.5x (text that is not shouted throughout).

Outputs, per text:

    valence      = T / sqrt(T^2 + kappa),  T = sum of word valences * (1 + 0.15 min(!, 3))
    arousal      = clip(max word arousal * (1 + 0.1 min(hits - 1, 3))
                        + 0.1 per "!" (<= 0.5) + 0.05 per "?" (<= 0.2) + shouting (<= 0.3), 0, 1)
    significance = max weight * (1 + 0.1 min(hits - 1, 3)), at least 0.6 * intensity when
                   intensity = max(|valence|, arousal) > 0.7
    consolidation_weight = 0.4 arousal + 0.6 significance                 in [0, 1]
    encoding_multiplier  = 1 + encoding_boost * consolidation_weight      in [1, 1 + boost]
    decay_multiplier     = 1 + (cap - 1) * max(|valence|, arousal, significance)   in [1, 3]
    intensity            = |valence| * arousal                            in [0, 1]

Neutral text scores 0 everywhere and multipliers of exactly 1 (the authors' code puts a
0.2 arousal floor under every text; here a memory without affect is not treated as
emotional). ``decay_multiplier`` equals ``ebbinghaus.emotional_multiplier`` for the same
cap, so the stored valence/arousal reproduce it at read time (significance has to be
passed too if it should count).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, ValidationError
from ..params import Params, bounded

# ---------------------------------------------------------------------------------------
# Lexicons. "word valence arousal" separated by "|". Values set by hand for this package.
_AFFECT_SOURCE = """
ecstatic .9 .95 | thrilled .85 .9 | overjoyed .9 .9 | elated .85 .85 | euphoric .85 .95 |
excited .7 .85 | exciting .7 .8 | amazing .8 .75 | awesome .8 .7 | fantastic .8 .7 |
incredible .7 .75 | wonderful .8 .6 | delighted .8 .7 | delightful .75 .55 | love .85 .7 |
lovely .7 .45 | adore .8 .65 | passionate .6 .85 | proud .7 .6 | pride .6 .55 | triumph .8 .8 |
victory .8 .75 | win .7 .7 | won .7 .7 | winning .7 .7 | celebrate .8 .75 | celebration .8 .75 |
party .6 .75 | success .7 .6 | successful .7 .55 | breakthrough .7 .75 | congratulations .8 .7 |
congrats .8 .7 | brilliant .75 .6 | excellent .8 .5 | great .6 .45 | good .5 .3 | nice .45 .25 |
happy .75 .55 | happiness .75 .5 | glad .6 .4 | joy .85 .7 | joyful .8 .65 | fun .6 .6 |
funny .5 .55 | laugh .6 .6 | laughed .6 .6 | smile .6 .4 | grateful .7 .35 | thankful .7 .35 |
thanks .5 .3 | thank .5 .3 | relief .6 .3 | relieved .6 .3 | hope .5 .4 | hopeful .55 .4 |
optimistic .6 .45 | confident .55 .5 | inspired .65 .65 | inspiring .65 .6 | motivated .55 .6 |
enjoy .65 .5 | enjoyable .6 .45 | pleasant .55 .25 | pleased .6 .35 | calm .4 .1 |
peaceful .55 .1 | relaxed .5 .1 | relaxing .5 .1 | content .4 .15 | satisfied .55 .3 |
comfortable .45 .15 | cozy .5 .15 | safe .45 .2 | beautiful .7 .5 | gorgeous .75 .6 |
perfect .75 .5 | best .7 .5 | better .4 .3 | improve .4 .35 | improvement .45 .35 | helpful .5 .3 |
friendly .5 .3 | supportive .5 .3 | welcome .45 .3 | promotion .7 .7 | promoted .7 .7 | reward .6 .6 |
rewarding .6 .5 | bonus .6 .6 | gift .6 .55 | surprise .3 .8 | surprised .2 .8 | wow .5 .8 |
yay .7 .8 | hooray .75 .85 | cool .4 .4 | favorite .6 .45 | favourite .6 .45 | liked .45 .3 |
admire .6 .45 | respect .5 .3 | trust .5 .3 | fortunate .6 .4 | lucky .6 .5 | blessed .65 .4 |
wedding .7 .75 | married .6 .6 | engaged .6 .65 | birthday .6 .6 | anniversary .6 .55 |
graduation .7 .7 | graduated .7 .7 | healthy .5 .3 | recovered .55 .45 | cured .7 .6 | fixed .4 .35 |
solved .5 .45 | resolved .45 .35 | achieve .6 .55 | achievement .65 .6 | accomplished .65 .55 |
awarded .7 .7 | award .65 .65 | honored .65 .55 | honoured .65 .55 | thrilling .75 .9 |
magnificent .8 .65 | superb .8 .55 | outstanding .75 .55 | impressive .6 .55 | cheerful .65 .5 |
kindness .6 .3 | generous .6 .35 | caring .6 .35 | sweet .55 .35 | cute .5 .4 | charming .55 .4 |
eager .5 .7 | enthusiastic .7 .8 | energetic .5 .8 | adventure .55 .75 | vacation .6 .5 |
holiday .55 .5 | treasure .6 .5 | miracle .75 .8 | heaven .7 .5 | paradise .7 .55 | bliss .8 .45 |
serene .5 .05 | tranquil .5 .05 | gentle .4 .1 | fine .2 .1 | okay .15 .1 | ok .15 .1 |
furious -.85 .95 | rage -.85 .95 | enraged -.85 .95 | angry -.75 .85 | anger -.75 .85 | mad -.6 .75 |
hate -.85 .8 | hatred -.85 .8 | outraged -.8 .9 | outrage -.75 .9 | terrified -.85 .95 | terror -.85 .95 |
horrified -.85 .9 | horrible -.8 .7 | horror -.8 .85 | terrible -.8 .65 | awful -.75 .6 | panic -.7 .95 |
panicked -.7 .95 | scared -.7 .85 | afraid -.65 .75 | fear -.7 .8 | frightened -.7 .85 |
frightening -.7 .8 | anxious -.55 .8 | anxiety -.6 .8 | nervous -.45 .75 | worried -.5 .65 |
worry -.5 .6 | stress -.55 .75 | stressed -.55 .75 | stressful -.55 .7 | frustrated -.6 .7 |
frustrating -.6 .65 | frustration -.6 .7 | annoyed -.5 .6 | annoying -.5 .55 | irritated -.5 .6 |
upset -.6 .65 | disgusted -.75 .7 | disgusting -.75 .65 | shocked -.4 .9 | shock -.4 .85 |
shocking -.45 .85 | crisis -.7 .85 | emergency -.6 .9 | disaster -.85 .85 | catastrophe -.9 .9 |
catastrophic -.9 .85 | accident -.7 .8 | crash -.65 .85 | crashed -.65 .85 | injured -.7 .8 |
injury -.65 .75 | hurt -.65 .65 | pain -.7 .7 | painful -.7 .65 | attack -.75 .9 | attacked -.8 .9 |
violence -.85 .9 | violent -.85 .85 | kill -.9 .9 | killed -.9 .85 | died -.85 .6 | death -.85 .6 |
dead -.8 .55 | dying -.85 .7 | murder -.95 .9 | war -.85 .85 | fire -.5 .75 | fired -.6 .7 |
threat -.65 .8 | threatened -.7 .8 | danger -.65 .85 | dangerous -.6 .8 | urgent -.2 .85 |
alarm -.5 .9 | alarming -.6 .85 | alert -.2 .75 | rush -.2 .75 | hurry -.2 .75 | asap -.1 .75 |
fail -.65 .6 | failed -.65 .6 | failure -.7 .6 | mistake -.5 .5 | error -.4 .45 | bug -.3 .4 |
broken -.5 .5 | wrong -.45 .45 | problem -.4 .45 | trouble -.5 .55 | damn -.5 .7 | scream -.5 .9 |
screamed -.55 .9 | cry -.55 .6 | cried -.6 .6 | tears -.45 .55 | betrayed -.85 .8 | betrayal -.85 .8 |
lied -.6 .6 | cheated -.75 .75 | abuse -.9 .85 | abused -.9 .85 | humiliated -.8 .75 |
embarrassed -.5 .6 | embarrassing -.5 .55 | ashamed -.6 .5 | shame -.6 .5 | guilty -.55 .5 |
jealous -.5 .6 | desperate -.7 .8 | hopeless -.8 .4 | devastated -.9 .8 | heartbroken -.9 .7 |
grief -.85 .6 | mourning -.8 .5 | funeral -.7 .55 | divorce -.7 .7 | breakup -.65 .65 | lost -.5 .5 |
loss -.6 .5 | stolen -.7 .75 | robbed -.75 .8 | sick -.55 .5 | illness -.6 .5 | disease -.65 .55 |
cancer -.85 .75 | hospital -.45 .6 | surgery -.4 .7 | fever -.4 .5 | bad -.55 .4 | worse -.6 .45 |
worst -.75 .55 | poor -.4 .3 | unfortunately -.4 .3 | sadly -.5 .3 | regret -.55 .4 |
disappointed -.6 .45 | disappointing -.6 .45 | disappointment -.6 .45 | sad -.65 .35 | sadness -.65 .35 |
unhappy -.6 .4 | lonely -.6 .3 | depressed -.75 .3 | depression -.75 .3 | miserable -.8 .5 |
gloomy -.5 .2 | bored -.35 .1 | boring -.4 .15 | tired -.35 .15 | exhausted -.5 .3 | sleepy -.1 .05 |
dull -.35 .1 | tedious -.4 .2 | meh -.15 .1 | fight -.65 .85 | fought -.6 .8 | argue -.5 .7 |
argument -.5 .7 | conflict -.55 .7 | yell -.55 .85 | yelled -.55 .85 | shouted -.5 .85 |
explosion -.6 .95 | exploded -.6 .95 | storm -.4 .7 | flood -.6 .75 | earthquake -.75 .9 |
collapse -.65 .8 | collapsed -.65 .8 | evicted -.75 .75 | bankrupt -.8 .75 | bankruptcy -.8 .75 |
debt -.5 .5 | overdue -.4 .55 | penalty -.45 .5 | lawsuit -.55 .7 | sued -.6 .7 |
arrested -.7 .85 | police -.3 .6 | crime -.75 .75 | scam -.75 .7 | fraud -.75 .75 | hacked -.7 .85 |
breach -.6 .8 | leaked -.55 .75 | outage -.55 .75 | downtime -.45 .6 | rejected -.6 .6 |
rejection -.6 .6 | refused -.45 .5 | denied -.5 .55 | ignored -.45 .4 | excluded -.5 .45 |
insulted -.7 .75 | rude -.55 .55 | cruel -.8 .7 | unfair -.6 .6 | useless -.55 .4 | unacceptable -.7 .75 | cancelled -.45 .5 | canceled -.45 .5 | pointless -.45 .3 |
confused -.3 .5 | confusing -.35 .45 | overwhelmed -.55 .8 | burnout -.65 .5 | nightmare -.8 .8 |
tragic -.85 .7 | tragedy -.85 .7 | horrendous -.85 .75 | dreadful -.75 .6 | grim -.6 .4 |
awkward -.35 .5 | uncomfortable -.4 .45 | uneasy -.4 .55 | tense -.4 .7 | scary -.65 .8 |
worrying -.5 .65 | concerned -.35 .5 | concern -.3 .45 | doubt -.3 .4 | suspicious -.4 .6 |
intense .1 .8 | wild .2 .8 | crazy -.1 .8 | insane -.2 .8 | huge .2 .6 | massive .1 .6 |
urgently -.2 .85 | immediately 0 .7 | critical -.4 .8 | quiet .1 .05 | rest .3 .05 | routine 0 .1 |
ordinary 0 .1 | usual 0 .1 | normal .05 .1
"""

_SIGNIFICANCE_SOURCE = """
important .7 | importance .6 | crucial .85 | critical .85 | essential .75 | vital .85 | key .5 |
significant .65 | major .6 | serious .6 | urgent .8 | urgently .8 | deadline .75 | emergency .9 |
priority .6 | must .5 | remember .6 | remind .5 | reminder .55 | password .8 | pin .6 |
allergy .9 | allergic .9 | allergies .9 | medication .8 | medicine .7 | diagnosis .85 | diagnosed .85 |
doctor .6 | hospital .7 | surgery .85 | pregnant .9 | pregnancy .9 | birthday .75 | anniversary .75 |
wedding .85 | married .8 | marriage .75 | engaged .75 | divorce .85 | funeral .85 | died .9 | death .9 |
born .85 | baby .7 | graduation .75 | graduated .75 | promotion .75 | promoted .75 | fired .8 |
hired .75 | resigned .75 | job .4 | salary .6 | contract .65 | lawsuit .85 | legal .55 | court .7 |
visa .7 | passport .65 | address .5 | account .4 | bank .5 | loan .6 | mortgage .7 | debt .6 |
budget .45 | invoice .45 | payment .5 | tax .55 | taxes .55 | insurance .55 | exam .65 | interview .7 |
meeting .35 | appointment .55 | decision .6 | decided .55 | agreed .5 | agreement .6 | promise .7 |
promised .7 | commitment .65 | goal .55 | goals .55 | moving .55 | relocating .65 | family .5 |
wife .55 | husband .55 | son .5 | daughter .5 | mother .5 | father .5 | mom .5 | dad .5 | parents .5 |
kids .45 | children .45 | boss .45 | client .45 | preference .55 | prefer .5 | prefers .5 |
vegetarian .7 | vegan .7 | religion .6 | security .6 | safety .6 | risk .55 | warning .65 |
milestone .7 | launch .6 | accident .8 | injury .75 | cancer .95 | forever .5 | secret .7 |
confidential .75 | private .55 | never .35 | always .35 | required .55 | requirement .6 |
mandatory .7 | compliance .6 | policy .5 | outage .7 | breach .85 | hacked .8 | lost .45 |
stolen .75 | blood .6 | condition .4 | chronic .7 | disability .7 |
anxiety .5 | depression .6 | therapy .6 | therapist .6 | crisis .8 | disaster .8 | bankrupt .8 |
bankruptcy .8 | evicted .85 | arrested .85 | police .6 | fraud .8 | scam .7
"""

# Phrases matched on the lower-cased token sequence before single words.
_PHRASES: dict[tuple[str, ...], float] = {
    ("do", "not", "forget"): 0.75,
    ("don't", "forget"): 0.75,
    ("dont", "forget"): 0.75,
    ("never", "forget"): 0.8,
    ("keep", "in", "mind"): 0.6,
    ("note", "that"): 0.45,
    ("for", "the", "record"): 0.5,
    ("from", "now", "on"): 0.55,
    ("make", "sure"): 0.5,
    ("life", "changing"): 0.85,
}

# The phrases by their first token, each list in the order of _PHRASES (longest first), so
# a token is compared only with the phrases that can start at it.
_PHRASES_BY_FIRST: dict[str, list[tuple[tuple[str, ...], float]]] = {}
for _phrase, _weight in _PHRASES.items():
    _PHRASES_BY_FIRST.setdefault(_phrase[0], []).append((_phrase, _weight))
del _phrase, _weight

_NEGATIONS = frozenset(
    "not no never none nobody nothing neither nor without cannot cant dont doesnt didnt isnt wasnt "
    "arent werent wont wouldnt shouldnt couldnt havent hasnt hadnt aint".split()
)
_INTENSIFIERS = frozenset(
    "very really extremely so incredibly absolutely totally completely super deeply truly highly "
    "especially particularly utterly too remarkably exceptionally terribly awfully hugely".split()
)
_DAMPENERS = frozenset("slightly somewhat barely kinda sorta mildly fairly rather marginally partly".split())
_CONTRAST = "but"
_NEGATION_SCOPE = 3

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_CLAUSE_SPLIT = re.compile(r"[.,;:!?]+")
_EMOTICONS: dict[str, tuple[float, float]] = {
    ":)": (0.5, 0.4), ":-)": (0.5, 0.4), ":(": (-0.5, 0.4), ":-(": (-0.5, 0.4),
    ":d": (0.6, 0.6), ":-d": (0.6, 0.6), "<3": (0.7, 0.5), ":'(": (-0.7, 0.6),
}
_EMOTICON_RE = re.compile(r"(?::-?\)|:-?\(|:-?[dD]\b|<3|:'\()")


def _parse(source: str, width: int) -> dict[str, tuple[float, ...]]:
    out: dict[str, tuple[float, ...]] = {}
    for entry in source.split("|"):
        parts = entry.split()
        if not parts:
            continue
        if len(parts) != width + 1:
            raise ValueError(f"bad lexicon entry {entry!r}")
        out[parts[0]] = tuple(float(p) for p in parts[1:])
    return out


AFFECT: dict[str, tuple[float, float]] = {k: (v[0], v[1]) for k, v in _parse(_AFFECT_SOURCE, 2).items()}
SIGNIFICANCE: dict[str, float] = {k: v[0] for k, v in _parse(_SIGNIFICANCE_SOURCE, 1).items()}


@dataclass(frozen=True)
class EmotionalParams(Params):
    kappa: float = bounded(1.0, 0.01, 100.0, "valence = T / sqrt(T^2 + kappa)")
    negation_factor: float = bounded(0.5, 0.0, 1.0, "a negated word's valence is multiplied by -this")
    intensifier_factor: float = bounded(1.3, 1.0, 3.0, "scale of the word after an intensifier")
    dampener_factor: float = bounded(0.6, 0.0, 1.0, "scale of the word after a dampener")
    caps_factor: float = bounded(1.5, 1.0, 3.0, "scale of an ALL-CAPS affect word")
    exclamation_valence: float = bounded(0.15, 0.0, 1.0, "valence amplification per '!' (up to 3)")
    exclamation_arousal: float = bounded(0.1, 0.0, 1.0, "arousal per '!'")
    exclamation_arousal_max: float = bounded(0.5, 0.0, 1.0, "cap of the '!' arousal")
    question_arousal: float = bounded(0.05, 0.0, 1.0, "arousal per '?'")
    question_arousal_max: float = bounded(0.2, 0.0, 1.0, "cap of the '?' arousal")
    shouting_arousal_max: float = bounded(0.3, 0.0, 1.0, "arousal when the text is shouted (all caps)")
    significance_floor_share: float = bounded(0.6, 0.0, 1.0, "significance >= share * intensity when intense")
    significance_floor_from: float = bounded(0.7, 0.0, 1.0, "intensity above which that floor applies")
    w_arousal: float = bounded(0.4, 0.0, 1.0, "consolidation weight of arousal")
    w_significance: float = bounded(0.6, 0.0, 1.0, "consolidation weight of significance")
    encoding_boost: float = bounded(0.5, 0.0, 2.0, "encoding_multiplier = 1 + boost * consolidation_weight")
    decay_cap: float = bounded(3.0, 1.0, 10.0, "largest decay-slowing multiplier")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.w_arousal + self.w_significance > 1.0 + 1e-9:
            raise ConfigError("EmotionalParams: w_arousal + w_significance must be at most 1")


DEFAULTS = EmotionalParams()


@dataclass(frozen=True)
class EmotionalTag:
    valence: float  # [-1, 1]
    arousal: float  # [0, 1]
    significance: float  # [0, 1]
    consolidation_weight: float  # [0, 1]
    encoding_multiplier: float  # [1, 1 + encoding_boost]
    decay_multiplier: float  # [1, decay_cap]
    intensity: float  # |valence| * arousal, [0, 1]
    hits: int  # lexicon words and phrases that contributed

    def as_dict(self) -> dict[str, float]:
        return {
            "valence": self.valence,
            "arousal": self.arousal,
            "significance": self.significance,
            "consolidation_weight": self.consolidation_weight,
            "encoding_multiplier": self.encoding_multiplier,
            "decay_multiplier": self.decay_multiplier,
            "intensity": self.intensity,
        }


def _lookup(word: str, table: dict[str, Any]) -> Any:
    """Exact match, then a few English inflections (loved -> love, worrying -> worry)."""
    if word in table:
        return table[word]
    if len(word) <= 3:
        return None
    candidates: list[str] = []
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ily", "y"), ("ing", ""), ("ing", "e"), ("ed", ""),
                         ("ed", "e"), ("es", ""), ("s", ""), ("ly", ""), ("ness", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            candidates.append(word[: -len(suffix)] + repl)
    # doubled consonant: stopped -> stop, sobbing -> sob
    for suffix in ("ed", "ing"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 4 and stem[-1] == stem[-2]:
            candidates.append(stem[:-1])
    for c in candidates:
        if c in table:
            return table[c]
    return None


# Words repeat across texts far more than texts do: remembering each word's entry saves the
# inflection search (the lexicons are constants).
@functools.lru_cache(maxsize=1 << 16)
def _affect_of(word: str) -> tuple[float, float] | None:
    return _lookup(word, AFFECT)


@functools.lru_cache(maxsize=1 << 16)
def _significance_of(word: str) -> float | None:
    return _lookup(word, SIGNIFICANCE)


def decay_multiplier(
    *, valence: Any, arousal: Any, significance: Any = 0.0, params: EmotionalParams = DEFAULTS
) -> Any:
    """1 + (cap - 1) * clip(max(|valence|, arousal, significance), 0, 1); vectorised."""
    if type(valence) is float and type(arousal) is float and type(significance) is float and not (
        math.isnan(valence) or math.isnan(arousal) or math.isnan(significance)
    ):  # three numbers: the same comparisons and IEEE operations as the array path, in floats
        x = max(max(abs(valence), arousal), significance)
        return 1.0 + (params.decay_cap - 1.0) * min(max(x, 0.0), 1.0)
    v = np.abs(np.asarray(valence, dtype=float))
    m = 1.0 + (params.decay_cap - 1.0) * np.clip(
        np.maximum(np.maximum(v, np.asarray(arousal, dtype=float)), np.asarray(significance, dtype=float)), 0.0, 1.0
    )
    if all(np.ndim(x) == 0 for x in (valence, arousal, significance)):
        return m.item()
    return m


def encoding_multiplier(*, arousal: Any, significance: Any = 0.0, params: EmotionalParams = DEFAULTS) -> Any:
    """1 + encoding_boost * (w_arousal * arousal + w_significance * significance), the tag's
    ``encoding_multiplier`` recomputed from stored arousal and significance; vectorised.

    Where a memory's links are made, it scales the initial Two-Factor edge (paper, after
    McGaugh 2004: arousal raises initial edge weights and lowers their decay)."""
    a = np.clip(np.asarray(arousal, dtype=float), 0.0, 1.0)
    s = np.clip(np.asarray(significance, dtype=float), 0.0, 1.0)
    m = 1.0 + params.encoding_boost * (params.w_arousal * a + params.w_significance * s)
    return m.item() if np.ndim(m) == 0 else m


def tag(text: str, *, params: EmotionalParams = DEFAULTS) -> EmotionalTag:
    """Valence, arousal, significance and the multipliers derived from them for one text."""
    if not isinstance(text, str):
        raise ValidationError(f"text must be a string, got {type(text).__name__}")
    return _tag_of(str(text), params)


@functools.lru_cache(maxsize=8192)
def _tag_of(text: str, params: EmotionalParams) -> EmotionalTag:
    """``tag`` of a text, remembered: the tag is a function of the text and the params alone
    (the lexicons are constants) and immutable, so a text stored again, or the same facts
    stored in another engine, are not tagged again."""
    # Tokens with the clause they belong to: negation does not cross , ; : . ! ?
    raw_words: list[str] = []
    clause: list[int] = []
    for c, part in enumerate(_CLAUSE_SPLIT.split(text)):
        for w in _WORD.findall(part):
            raw_words.append(w)
            clause.append(c)
    words = [w.lower().strip("'-") for w in raw_words]
    norm = [w.replace("'", "") if w.endswith("n't") else w for w in words]  # don't -> dont

    alpha_words = [w for w in raw_words if len(w.strip("'-")) >= 2]
    caps_words = [w for w in alpha_words if w.isupper()]
    shouting = len(alpha_words) >= 3 and len(caps_words) / len(alpha_words) >= 0.6

    # Valence position weights from the last contrastive "but".
    last_but = max((i for i, w in enumerate(norm) if w == _CONTRAST), default=-1)

    total = 0.0
    arousals: list[float] = []
    sigs: list[float] = []
    hits = 0
    skip_until = -1
    in_phrase: set[int] = set()  # tokens of a matched phrase ("don't forget") negate nothing
    for i, w in enumerate(norm):
        if i <= skip_until:
            continue
        # Phrases (significance only), longest first.
        matched = False
        for phrase, weight in _PHRASES_BY_FIRST.get(w, ()):
            k = len(phrase)
            if tuple(norm[i : i + k]) == phrase:
                sigs.append(weight)
                hits += 1
                skip_until = i + k - 1
                in_phrase.update(range(i, i + k))
                matched = True
                break
        if matched:
            continue
        if w in ("kind", "sort") and i + 1 < len(norm) and norm[i + 1] == "of":
            continue  # "kind of" is a dampener, not the word "kind"
        affect = _affect_of(w)
        sig = _significance_of(w)
        if affect is None and sig is None:
            continue  # most words: no entry, nothing to scale or negate
        negated = any(
            norm[j] in _NEGATIONS and clause[j] == clause[i] and j not in in_phrase
            for j in range(max(0, i - _NEGATION_SCOPE), i)
        )
        scale = 1.0
        arousal_bonus = 0.0
        prev = norm[i - 1] if i >= 1 else ""
        prev2 = norm[i - 2] if i >= 2 else ""
        if prev in _INTENSIFIERS:
            scale *= params.intensifier_factor
            arousal_bonus += 0.1
        elif prev in _DAMPENERS or (prev == "of" and prev2 in ("kind", "sort")) or (prev == "bit" and prev2 == "a"):
            scale *= params.dampener_factor
        if raw_words[i].isupper() and len(raw_words[i]) >= 2 and not shouting:
            scale *= params.caps_factor

        if affect is not None:
            v, a = affect
            pos = 1.0 if last_but < 0 else (1.5 if i > last_but else 0.5)
            if negated:
                v = -params.negation_factor * v
                a = a * 0.7
            total += v * scale * pos
            arousals.append(min(1.0, a * min(scale, 1.3) + arousal_bonus))
            hits += 1
        if sig is not None and not negated:
            sigs.append(min(1.0, sig * (1.2 if scale > 1.0 else scale)))
            hits += affect is None

    for m in _EMOTICON_RE.finditer(text):
        v, a = _EMOTICONS[m.group(0).lower()]
        total += v
        arousals.append(a)
        hits += 1

    n_excl = text.count("!")
    n_q = text.count("?")
    total *= 1.0 + params.exclamation_valence * min(n_excl, 3)
    valence = total / math.sqrt(total * total + params.kappa) if total != 0.0 else 0.0

    arousal = 0.0
    if arousals:
        arousal = max(arousals) * (1.0 + 0.1 * min(len(arousals) - 1, 3))
    arousal += min(params.exclamation_arousal_max, params.exclamation_arousal * n_excl)
    arousal += min(params.question_arousal_max, params.question_arousal * n_q)
    if shouting:
        arousal += params.shouting_arousal_max
    arousal = float(min(1.0, max(0.0, arousal)))

    significance = 0.0
    if sigs:
        significance = min(1.0, max(sigs) * (1.0 + 0.1 * min(len(sigs) - 1, 3)))
    intensity_peak = max(abs(valence), arousal)
    if intensity_peak > params.significance_floor_from:
        significance = max(significance, params.significance_floor_share * intensity_peak)
    significance = float(min(1.0, significance))

    cw = params.w_arousal * arousal + params.w_significance * significance
    return EmotionalTag(
        valence=float(max(-1.0, min(1.0, valence))),
        arousal=arousal,
        significance=significance,
        consolidation_weight=float(cw),
        encoding_multiplier=float(1.0 + params.encoding_boost * cw),
        decay_multiplier=float(decay_multiplier(valence=valence, arousal=arousal, significance=significance, params=params)),
        intensity=float(abs(valence) * arousal),
        hits=int(hits),
    )


def tag_many(texts: Sequence[str], *, params: EmotionalParams = DEFAULTS) -> dict[str, np.ndarray]:
    """``tag`` for each text, returned as arrays keyed by field name (for batch stores)."""
    tags = [tag(t, params=params) for t in texts]
    keys = ("valence", "arousal", "significance", "consolidation_weight", "encoding_multiplier",
            "decay_multiplier", "intensity")
    return {k: np.array([getattr(t, k) for t in tags], dtype=float) for k in keys}


__all__ = [
    "AFFECT",
    "SIGNIFICANCE",
    "EmotionalParams",
    "EmotionalTag",
    "decay_multiplier",
    "encoding_multiplier",
    "tag",
    "tag_many",
]
