"""A seeded generator of facts that change: people move, change jobs, numbers and habits.

:func:`generate` draws, with ``numpy.random.default_rng(seed)``:

* ``entities`` people with distinct first names (the name in every statement about them),
  plus teams and projects;
* ``pairs`` **chains**: one entity, one attribute (employer, city, phone, email, car,
  weekend hobby, drink, manager, a project's lead, a team's meeting slot), 2 to
  ``chain_max`` values, each value stated in natural language drawn from several phrasings,
  the later statements sometimes naming the old value ("left Acme and now works for ...");
  the first value on a day in the first half of the timeline, every later one 2-45 days
  after the one before;
* ``static`` facts of the same attributes that never change (the same shapes, other
  entities);
* ``filler_per_day`` unrelated everyday statements every day, many of them naming the
  same people (so a person's name alone does not find the fact);
* **uses**: with probability ``use_old`` a chain's question is asked once (read-write, as
  an application would) while its first value is still current, so the stale fact was
  used and reinforced before it changed.

Every day's statements form one session at 19:00 UTC (shuffled): independent notes, not a
conversation (``TimedSession.conversation=False``), so zenbrain stores each on its own
rather than as the context of the next. Questions are asked the
day after the last day and ask for the current value; gold is the latest statement.
A hit is classified by its text: **current** if it names the entity and the current value,
**stale** if it names the entity and an older value but not the current one. An entity's
chain never repeats a value, and pools of different attributes never overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..base import Doc
from .timeline import DAY, Probe, TimedSession, Use

__all__ = ["ATTRIBUTES", "UpdateSpec", "UpdateWorkload", "generate"]

T0 = 1_700_000_000.0 - (1_700_000_000.0 % DAY)  # a fixed midnight UTC

FIRST_NAMES = (
    "Priya Kenji Amara Lucas Ingrid Mateo Yara Tobias Leila Oskar Nadia Felix Zara Emil Sofia Ravi Hana Jonas "
    "Mira Diego Freya Omar Elena Theo Ayumi Marco Greta Idris Chloe Rafael Anouk Samir Lina Viktor Noor Hugo "
    "Maya Anders Talia Bruno Esme Kwame Rosa Dmitri Isla Pavel Saanvi Malik Clara Henrik Aisha Leon Farah Nico "
    "Beatriz Arjun Solveig Tariq Ines Lars Yusuf Camille Jakob Meera Finn Lucia Otto Zainab Pierre Wren Kofi"
).split()
LAST_NAMES = (
    "Raman Sato Okafor Silva Berg Costa Haddad Vogel Nasser Lind Petrov Wagner Rahman Novak Rossi Mehta Tanaka "
    "Fischer Moreau Alvarez"
).split()
COMPANY_A = ("Northwind Bluefin Crescent Ironbark Larkspur Quillon Redwater Saltmarsh Tidewell Umberfield Vantor "
             "Westerly Yellowpine Zephyr Amberline Brightwater Coldharbor Duskfield Emberton Foxglove").split()
COMPANY_B = ("Logistics Analytics Foods Labs Robotics Insurance Pharma Media Outfitters Energy").split()
CITIES = ("Lisbon Porto Valencia Lyon Ghent Utrecht Bergen Aarhus Tallinn Krakow Brno Ljubljana Zagreb Trieste Bologna "
          "Seville Malaga Bilbao Bordeaux Nantes Leipzig Dresden Graz Salzburg Basel Lausanne Gothenburg Uppsala Turku "
          "Tampere Riga Vilnius Cork Galway Leeds Bristol Glasgow Cardiff Halifax Montreal Quebec Winnipeg Boise Tucson "
          "Omaha Madison Savannah Portland Asheville Richmond").split()
CARS = ("Volvo XC40|Toyota Corolla|Honda Civic|Skoda Octavia|Mazda CX-5|Kia Niro|Renault Zoe|Fiat Panda|Subaru Outback|"
        "Hyundai Kona|Nissan Leaf|Ford Focus|Peugeot 208|Tesla Model 3|Volkswagen Golf|Mini Cooper|Seat Ibiza|"
        "Citroen Berlingo|Dacia Duster|Audi A3").split("|")
HOBBIES = ("tennis|rock climbing|rowing|salsa dancing|chess|pottery|open-water swimming|road cycling|archery|fencing|"
           "judo|kayaking|badminton|bouldering|birdwatching|woodworking|trail running|sailing|watercolour painting|"
           "beekeeping|table tennis|ice skating").split("|")
DRINKS = ("green tea|espresso|oat-milk latte|sparkling water|rooibos|chai|cold brew|hot chocolate|matcha|ginger beer|"
          "kombucha|flat white|earl grey|yerba mate|iced americano|peppermint tea|cortado|lemon water").split("|")
DAYS = ("Monday Tuesday Wednesday Thursday Friday").split()
HOURS = ("9:00 9:30 10:00 11:00 13:30 14:00 15:00 16:30").split()
TEAMS = ("design platform billing support research mobile data security onboarding growth sales legal").split()
PROJECTS = ("Falcon Harbor Lantern Meridian Cobalt Juniper Orchid Summit Tundra Vesper Willow Atlas Beacon Comet "
            "Delta Ember").split()
DOMAINS = ("mailbox.org fastmail.com proton.me posteo.de example.net").split()


@dataclass(frozen=True)
class Attribute:
    name: str
    subject: str  # "person", "team" or "project"
    first: tuple[str, ...]  # how a value is first stated
    later: tuple[str, ...]  # how a new value is stated ({old} = the previous value)
    questions: tuple[str, ...]


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("employer", "person",
              ("{e} works at {v}.", "{e} has a job at {v}.", "{e} is employed by {v} as an analyst.",
               "{e} spends the working week at the {v} office."),
              ("{e} started a new job at {v}.", "{e} left {old} and now works for {v}.", "{e} has joined {v}.",
               "Big news from {e}: {v} hired {e} this month."),
              ("Where does {e} work now?", "Who is {e}'s current employer?", "Which company employs {e} these days?")),
    Attribute("city", "person",
              ("{e} lives in {v}.", "{e} rents a flat in {v}.", "{e} has a home in {v}."),
              ("{e} moved to {v}.", "{e} relocated from {old} to {v}.", "{e} just settled into a new apartment in {v}."),
              ("Which city does {e} live in now?", "Where is {e} living these days?")),
    Attribute("phone", "person",
              ("{e}'s phone number is {v}.", "You can reach {e} on {v}."),
              ("{e} has a new phone number: {v}.", "{e} changed numbers, the new one is {v}.",
               "{e}'s number is now {v}; the old {old} no longer works."),
              ("What is {e}'s phone number?", "How can I call {e}?")),
    Attribute("email", "person",
              ("{e}'s email address is {v}.", "Write to {e} at {v}."),
              ("{e} switched to a new email address, {v}.", "{e} no longer reads {old}; use {v} instead."),
              ("What is {e}'s email address?", "Which address should I email {e} at?")),
    Attribute("car", "person",
              ("{e} drives a {v}.", "{e}'s car is a {v}."),
              ("{e} sold the {old} and bought a {v}.", "{e} now drives a {v}.", "{e} picked up a {v} last week."),
              ("What car does {e} drive now?", "What is {e} driving these days?")),
    Attribute("hobby", "person",
              ("{e} spends weekends on {v}.", "{e}'s favourite weekend activity is {v}."),
              ("{e} gave up {old} and took up {v}.", "These days {e} is hooked on {v}.",
               "{e} has a new weekend passion: {v}."),
              ("What does {e} do on weekends now?", "What is {e}'s hobby these days?")),
    Attribute("drink", "person",
              ("{e} always orders {v}.", "{e}'s usual drink is {v}."),
              ("{e} has gone off {old} and prefers {v} now.", "{e} switched to {v}.",
               "Lately {e} only drinks {v}."),
              ("What does {e} like to drink these days?", "What is {e}'s usual drink now?")),
    Attribute("manager", "person",
              ("{e} reports to {v}.", "{e}'s manager is {v}."),
              ("{e} has a new manager, {v}.", "After the reorg {e} reports to {v} instead of {old}."),
              ("Who is {e}'s manager now?", "Who does {e} report to?")),
    Attribute("lead", "project",
              ("{v} leads {e}.", "{e} is run by {v}."),
              ("{v} has taken over {e}.", "{old} handed {e} over to {v}.", "{e} has a new lead: {v}."),
              ("Who leads {e} now?", "Who is in charge of {e}?")),
    Attribute("meeting", "team",
              ("{e}'s weekly sync is on {v}.", "{e} meets every week on {v}."),
              ("{e}'s weekly sync moved to {v}.", "From now on {e} meets on {v}.",
               "{e} no longer meets on {old}; the sync is on {v} now."),
              ("When does {e} have its weekly sync?", "What time is {e}'s weekly meeting?")),
)

FILLER = (
    "{e} sent photos from the weekend.", "{e} recommended a documentary about whales.",
    "Had lunch with {e} at the usual place.", "{e} is reading a thriller set in Iceland.",
    "{e} complained about the rain again.", "{e} asked whether anyone has a spare umbrella.",
    "{e} shared a recipe for lentil soup.", "{e} is looking forward to the holidays.",
    "{e} said the new coffee machine is loud.", "{e} found a nice bakery near the station.",
    "Talked with {e} about the football match.", "{e} is planning a birthday surprise for a friend.",
    "{e} posted a picture of a sunset.", "{e} had a cold this week.", "{e} lost their keys and found them later.",
    "The printer jammed again this morning.", "It was sunny and warm all afternoon.",
    "Watched a long film last night.", "The train was twenty minutes late.", "Bought groceries and fresh flowers.",
    "Cleaned the kitchen and watered the plants.", "The neighbours are renovating their garden.",
    "Tried a new pasta recipe for dinner.", "The team lunch was pizza today.", "Went for a long walk by the river.",
)


@dataclass(frozen=True)
class UpdateSpec:
    """Generator parameters (defaults: the documented full workload)."""

    seed: int = 0
    entities: int = 48
    pairs: int = 120
    chain_max: int = 3
    static: int = 60
    filler_per_day: int = 6
    days: int = 90
    min_gap_days: float = 2.0
    max_gap_days: float = 45.0
    use_old: float = 0.5

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class UpdateWorkload:
    sessions: list[TimedSession]
    probes: list[Probe]
    uses: list[Use]
    end_time: float
    spec: UpdateSpec


class _Values:
    """Values of one attribute, never repeated within an entity's chain; pools of different
    attributes do not overlap."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.used: set[tuple[str, str, str]] = set()

    def _pick(self, key: tuple[str, str], pool: Sequence[str]) -> str:
        free = [v for v in pool if (*key, v) not in self.used]
        if not free:
            raise ValueError(f"the value pool of {key[0]!r} is exhausted")
        v = free[int(self.rng.integers(len(free)))]
        self.used.add((*key, v))
        return v

    def draw(self, attr: str, entity: str, people: Sequence[str]) -> str:
        r = self.rng
        key = (attr, entity)
        if attr == "employer":
            return self._pick(key, [f"{a} {b}" for a in COMPANY_A for b in COMPANY_B])
        if attr == "city":
            return self._pick(key, CITIES)
        if attr == "phone":
            return self._pick(key, [f"+1 555 {int(r.integers(100, 999))} {int(r.integers(1000, 9999))}"])
        if attr == "email":
            return self._pick(key, [f"{r.choice(FIRST_NAMES).lower()}.{r.choice(LAST_NAMES).lower()}"
                                     f"{int(r.integers(10, 99))}@{r.choice(DOMAINS)}"])
        if attr == "car":
            return self._pick(key, CARS)
        if attr == "hobby":
            return self._pick(key, HOBBIES)
        if attr == "drink":
            return self._pick(key, DRINKS)
        if attr in ("manager", "lead"):
            return self._pick(key, [f"{f} {last}" for f in people if f != entity for last in LAST_NAMES])
        if attr == "meeting":
            return self._pick(key, [f"{d} at {h}" for d in DAYS for h in HOURS])
        raise ValueError(attr)


def _subjects(attr: Attribute, people: Sequence[str]) -> list[str]:
    if attr.subject == "team":
        return [f"the {t} team" for t in TEAMS]
    if attr.subject == "project":
        return [f"Project {p}" for p in PROJECTS]
    return list(people)


def generate(spec: UpdateSpec) -> UpdateWorkload:
    """The workload of ``spec`` (deterministic in ``spec``)."""
    if spec.entities > len(FIRST_NAMES):
        raise ValueError(f"at most {len(FIRST_NAMES)} entities")
    if spec.chain_max < 2 or spec.days < 2 or not 0 < spec.min_gap_days <= spec.max_gap_days:
        raise ValueError("need chain_max >= 2, days >= 2 and 0 < min_gap_days <= max_gap_days")
    rng = np.random.default_rng(spec.seed)
    people = [str(x) for x in rng.choice(FIRST_NAMES, size=spec.entities, replace=False)]
    values = _Values(rng)
    slots = [(a, s) for a in ATTRIBUTES for s in _subjects(a, people)]
    order = rng.permutation(len(slots))
    need = spec.pairs + spec.static
    if need > len(slots):
        raise ValueError(f"{need} (entity, attribute) slots asked for, {len(slots)} available")
    chosen = [slots[i] for i in order[:need]]
    by_day: dict[int, list[Doc]] = {}
    probes: list[Probe] = []
    uses: list[Use] = []
    last_day = spec.days - 1

    def say(day: int, doc: Doc) -> None:
        by_day.setdefault(day, []).append(doc)

    def fill(template: str, e: str, v: str, old: str | None) -> str:
        text = template.replace("{e}", e).replace("{v}", v).replace("{old}", old or "")
        return text[0].upper() + text[1:]

    for j, (attr, subject) in enumerate(chosen):
        changed = j < spec.pairs
        n_values = int(rng.integers(2, spec.chain_max + 1)) if changed else 1
        day = int(rng.integers(0, max(1, spec.days // 2)))
        vals: list[str] = []
        prev_doc: str | None = None
        first_day = day
        for i in range(n_values):
            if i > 0:
                day = round(day + rng.uniform(spec.min_gap_days, spec.max_gap_days))
                if day > last_day:
                    break
            v = values.draw(attr.name, subject, people)
            if i == 0:
                template = attr.first[int(rng.integers(len(attr.first)))]
            else:
                mentions = [t for t in attr.later if "{old}" in t]
                plain = [t for t in attr.later if "{old}" not in t]
                pool = mentions if (mentions and rng.random() < 0.5) or not plain else plain
                template = pool[int(rng.integers(len(pool)))]
            text = fill(template, subject, v, vals[-1] if vals else None)
            doc_id = f"{'c' if changed else 's'}{j}:{i}"
            meta: dict[str, Any] = {"attribute": attr.name, "entity": subject, "value": v}
            if prev_doc is not None:
                meta["supersedes"] = prev_doc
            say(day, Doc(doc_id, text, time=None, metadata=meta))
            vals.append(v)
            prev_doc = doc_id
        question = fill(attr.questions[int(rng.integers(len(attr.questions)))], subject, "", None)
        group = "changed" if len(vals) > 1 else "unchanged"
        extra = {"attribute": attr.name, "entity": subject, "current_value": vals[-1], "stale_values": vals[:-1],
                 "values": len(vals), "current_doc": prev_doc}
        probes.append(Probe(f"q{j}", question, (str(prev_doc),), "end", None, group, extra))
        if len(vals) > 1 and rng.random() < spec.use_old:
            # One use while the first value is current (a day after it was said, evening).
            uses.append(Use(T0 + (first_day + 1) * DAY + 20 * 3600.0, question))
    for day in range(spec.days):
        for _ in range(spec.filler_per_day):
            template = FILLER[int(rng.integers(len(FILLER)))]
            e = people[int(rng.integers(len(people)))]
            say(day, Doc(f"f{day}:{len(by_day.get(day, []))}", fill(template, e, "", None), metadata={"filler": True}))
    sessions: list[TimedSession] = []
    for day in sorted(by_day):
        docs = list(by_day[day])
        perm = rng.permutation(len(docs))
        when = T0 + day * DAY + 19 * 3600.0
        docs = [Doc(docs[i].id, docs[i].text, time=when, speaker=None, session=f"day{day}", metadata=docs[i].metadata)
                for i in perm]
        sessions.append(TimedSession(f"day{day}", when, tuple(docs), conversation=False))
    end = T0 + spec.days * DAY + 10 * 3600.0
    uses = [u for u in uses if u.time < end]
    return UpdateWorkload(sessions, probes, sorted(uses, key=lambda u: u.time), end, spec)
