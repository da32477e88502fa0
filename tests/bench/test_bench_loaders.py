from __future__ import annotations

from datetime import UTC, datetime

import pytest
from bench_data import REAL_LOCOMO, REAL_LONGMEMEVAL, lme_data, locomo_data

from zenbrain.bench.locomo import (
    clean_evidence,
    load_locomo,
    parse_locomo,
    parse_locomo_datetime,
    pool_conversations,
    prefix_conversation,
    resolve_data_dir,
)
from zenbrain.bench.longmemeval import (
    load_longmemeval,
    parse_longmemeval,
    parse_longmemeval_date,
)


def _ts(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


# --------------------------------------------------------------------------- LoCoMo


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1:56 pm on 8 May, 2023", _ts(2023, 5, 8, 13, 56)),
        ("12:48 am on 1 February, 2023", _ts(2023, 2, 1, 0, 48)),
        ("12:05 pm on 31 December, 2022", _ts(2022, 12, 31, 12, 5)),
        ("10:37 AM on 27 June 2023", _ts(2023, 6, 27, 10, 37)),
        ("sometime in spring", None),
        ("13:00 pm on 1 May, 2023", None),
        ("1:00 pm on 31 February, 2023", None),
        (None, None),
        (5, None),
    ],
)
def test_parse_locomo_datetime(text, expected):
    assert parse_locomo_datetime(text) == expected


def test_clean_evidence_splits_repairs_and_counts():
    valid = {"D1:1", "D1:3", "D2:1", "D11:26"}
    c = clean_evidence(["D1:1; D1:3", "D:11:26", "D", "D9:9", "D1:1", 42, "d2:01"], valid)
    assert c.ids == ("D1:1", "D1:3", "D11:26", "D2:1")
    assert c.dangling == ("D9:9",)
    assert c.malformed == ("D", "42")
    assert c.repaired == (("D:11:26", "D11:26"), ("d2:01", "D2:1"))
    assert clean_evidence(None, valid).ids == ()
    assert clean_evidence("D1:1, D2:1", valid).ids == ("D1:1", "D2:1")
    assert clean_evidence({"weird": 1}, valid).ids == ()


def test_locomo_docs_and_questions():
    conv, second = parse_locomo(locomo_data())
    assert conv.sample_id == "conv-1" and second.sample_id == "conv-2"
    assert conv.speakers == ("Alice", "Bob")
    assert [d.id for d in conv.docs] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D3:1"]
    d = conv.docs[2]
    assert d.text == "Alice: Here is a picture from the park. [shares a photo of a golden retriever on the grass]"
    assert d.time == _ts(2023, 5, 8, 13, 56)
    assert d.speaker == "Alice" and d.session == "1"
    assert d.metadata["blip_caption"].startswith("a photo of")
    assert d.metadata["turn_index"] == 2 and d.metadata["sample_id"] == "conv-1"
    assert conv.docs[3].time == _ts(2024, 2, 1, 0, 48)
    assert conv.docs[5].time is None  # unparseable session date
    assert conv.session_times == {"1": _ts(2023, 5, 8, 13, 56), "2": _ts(2024, 2, 1, 0, 48), "3": None}
    assert conv.last_time == _ts(2024, 2, 1, 0, 48)

    qs = conv.questions
    assert len(qs) == 8  # the non-dict entry is skipped
    assert qs[0].evidence == ("D1:1",) and qs[0].category_name == "single-hop"
    assert qs[1].evidence == ("D1:1", "D1:3") and qs[1].category_name == "multi-hop"
    assert qs[2].evidence == ("D2:1",) and qs[2].malformed == ("D",) and qs[2].answer == "2024"
    assert qs[3].evidence == ("D3:1",) and qs[3].dangling == ("D9:9",)
    assert qs[4].answer is None and qs[4].adversarial_answer == "cats" and qs[4].category == 5
    assert qs[5].evidence == () and qs[7].evidence == ()
    assert qs[6].evidence == () and qs[6].category == 4 and len(qs[6].malformed) == 2
    assert all(q.query_time == conv.last_time for q in qs)
    assert conv.stats["dangling"] == 1
    assert conv.stats["malformed"] == 3
    assert conv.stats["repaired"] == 1
    assert conv.stats["questions_without_evidence"] == 3
    assert conv.stats["skipped_turns"] == 1 and conv.stats["skipped_questions"] == 1
    assert conv.stats["sessions_without_time"] == 1


def test_locomo_without_speaker_and_caption():
    conv = parse_locomo(locomo_data(), include_speaker=False, include_caption=False)[0]
    assert conv.docs[2].text == "Here is a picture from the park."


def test_locomo_pooled_ids():
    pooled = parse_locomo(locomo_data(), pooled=True)
    assert pooled[0].docs[0].id == "conv-1/D1:1"
    assert pooled[0].questions[1].evidence == ("conv-1/D1:1", "conv-1/D1:3")
    plain = parse_locomo(locomo_data())
    again = prefix_conversation(plain[0])
    assert [d.id for d in again.docs] == [d.id for d in pooled[0].docs]
    assert prefix_conversation(again) is again
    docs, questions = pool_conversations(plain)
    assert len(docs) == 9 and len({d.id for d in docs}) == 9
    assert {e for q in questions for e in q.evidence} <= {d.id for d in docs}
    with pytest.raises(ValueError):
        pool_conversations([plain[0], plain[0]])


def test_locomo_filters_and_bad_input():
    assert [c.sample_id for c in parse_locomo(locomo_data(), sample_ids=["conv-2"])] == ["conv-2"]
    assert len(parse_locomo(locomo_data(), limit=1)) == 1
    assert parse_locomo([None, {"qa": None}])[0].docs == []
    with pytest.raises(ValueError):
        parse_locomo("nope")


def test_load_locomo_paths(locomo_file, monkeypatch):
    assert len(load_locomo(locomo_file)) == 2
    monkeypatch.setenv("ZENBRAIN_DATA", str(locomo_file.parent))
    assert resolve_data_dir() == locomo_file.parent
    assert len(load_locomo()) == 2
    assert resolve_data_dir(str(locomo_file.parent / "x")) == locomo_file.parent / "x"
    monkeypatch.setenv("ZENBRAIN_DATA", str(locomo_file.parent / "empty"))
    with pytest.raises(FileNotFoundError):
        load_locomo()
    assert len(load_locomo(data_dir=locomo_file.parent)) == 2


@pytest.mark.skipif(not REAL_LOCOMO.exists(), reason="real LoCoMo file not present")
def test_real_locomo_file():
    convs = load_locomo(REAL_LOCOMO)
    assert [c.sample_id for c in convs] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
    assert sum(len(c.docs) for c in convs) == 2760
    assert sum(len(c.questions) for c in convs) == 999
    total = {k: sum(c.stats.get(k, 0) for c in convs) for k in ("dangling", "malformed", "repaired")}
    assert total == {"dangling": 1, "malformed": 1, "repaired": 1}
    for c in convs:
        ids = c.doc_ids
        assert len(ids) == len(c.docs)
        assert all(e in ids for q in c.questions for e in q.evidence)
        assert all(d.time is not None for d in c.docs)
    q37 = convs[0].questions[37]
    assert q37.evidence == ("D8:6", "D9:17")
    assert any("[shares a photo" in d.text for d in convs[0].docs)


# --------------------------------------------------------------------------- LongMemEval


def test_parse_longmemeval_date():
    assert parse_longmemeval_date("2023/05/30 (Tue) 23:40") == _ts(2023, 5, 30, 23, 40)
    assert parse_longmemeval_date("2023/05/30") == _ts(2023, 5, 30)
    assert parse_longmemeval_date("bad date") is None
    assert parse_longmemeval_date(None) is None


def test_longmemeval_items():
    item, abstention, temporal = parse_longmemeval(lme_data())
    assert item.question_id == "q1" and not item.is_abstention and abstention.is_abstention
    assert item.query_time == _ts(2023, 5, 30, 23, 40)
    assert [d.id for d in item.docs][:3] == ["q1::s0::t0", "q1::s0::t1", "q1::s1::t0"]
    # a repeated session id keeps unique doc ids but maps to the same session
    assert item.docs[-1].id == "q1::s3::t1"
    assert item.turn_to_session["q1::s3::t1"] == "s_a"
    assert item.stats["duplicate_session_ids"] == 1
    assert item.session_ids == ["s_a", "answer_1", "s_b", "s_a"]
    assert item.gold_turn_ids == ("q1::s1::t0", "q1::s1::t1")
    assert item.answer_session_ids == ("answer_1",)
    assert item.turn_to_session["q1::s1::t0"] == "answer_1"
    assert item.stats["dangling_answer_sessions"] == 1
    d = item.docs[2]
    assert d.speaker == "user" and d.session == "s1" and d.time == _ts(2023, 5, 21, 10, 0)
    assert d.metadata["turn_index"] == 0 and d.metadata["session_index"] == 1
    assert item.docs[5].session == "s2" and item.docs[5].time is None  # "bad date"
    assert item.has_retrieval_gold and not abstention.has_retrieval_gold
    assert temporal.answer == "7"


def _seen_by_system(item) -> str:
    """Everything a system under test receives about a haystack, as one string."""
    return repr([(d.id, d.text, d.time, d.speaker, d.session, sorted(d.metadata.items())) for d in item.docs])


def test_longmemeval_docs_carry_no_hint_of_the_gold_sessions():
    for item in parse_longmemeval(lme_data()):
        seen = _seen_by_system(item)
        assert "answer" not in seen.replace("Business Administration", "")  # no "answer_..." id
        assert "has_answer" not in seen
        for gold in item.answer_session_ids:
            assert gold not in seen


def test_longmemeval_options(lme_file):
    assert [i.question_id for i in load_longmemeval(lme_file, include_abstention=False)] == ["q1", "q3"]
    assert [i.question_id for i in load_longmemeval(lme_file, question_types=["temporal-reasoning"])] == ["q3"]
    assert len(load_longmemeval(lme_file, limit=1)) == 1
    user_only = load_longmemeval(lme_file, user_only=True)[0]
    assert all(d.speaker == "user" for d in user_only.docs)
    assert user_only.gold_turn_ids == ("q1::s1::t0",)


@pytest.mark.skipif(not REAL_LONGMEMEVAL.exists(), reason="real LongMemEval file not present")
def test_real_longmemeval_file():
    (item,) = load_longmemeval(REAL_LONGMEMEVAL)
    assert item.question_id == "e47becba"
    assert len(item.session_ids) == 53 and len(item.docs) == 550
    assert item.answer_session_ids == ("answer_280352e9",)
    gold_index = item.session_ids.index("answer_280352e9")
    assert item.gold_turn_ids == (f"e47becba::s{gold_index}::t4", f"e47becba::s{gold_index}::t5")
    assert "answer_" not in _seen_by_system(item)
    assert item.query_time == _ts(2023, 5, 30, 23, 40)
    assert not item.is_abstention
