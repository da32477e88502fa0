"""Small LoCoMo and LongMemEval data written by the tests themselves, and the real files' paths."""

from __future__ import annotations

import os
from pathlib import Path

REAL_DATA_DIR = Path(os.environ.get("ZENBRAIN_DATA") or Path(__file__).resolve().parents[2] / ".." / "shared" / "data")
REAL_LOCOMO = REAL_DATA_DIR / "locomo_dev.json"
REAL_LONGMEMEVAL = REAL_DATA_DIR / "longmemeval_s_one_question.json"


def locomo_sample(sample_id: str = "conv-1", *, speaker_a: str = "Alice", speaker_b: str = "Bob") -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": speaker_a,
            "speaker_b": speaker_b,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": speaker_a, "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit last week."},
                {"speaker": speaker_b, "dia_id": "D1:2", "text": "That is wonderful! What breed is Biscuit?"},
                {
                    "speaker": speaker_a,
                    "dia_id": "D1:3",
                    "text": "Here is a picture from the park.",
                    "img_url": ["https://example.invalid/x.jpg"],
                    "blip_caption": "a photo of a golden retriever on the grass",
                    "query": "golden retriever",
                },
            ],
            "session_2_date_time": "12:48 am on 1 February, 2024",
            "session_2": [
                {"speaker": speaker_b, "dia_id": "D2:1", "text": "I started learning the violin in January."},
                {"speaker": speaker_a, "dia_id": "D2:2", "text": "Violin lessons sound hard. Do you practise daily?"},
                "not a turn",
            ],
            "session_3_date_time": "sometime in spring",
            "session_3": [
                {"speaker": speaker_b, "dia_id": "D3:1", "text": "My sister visits Lisbon next month."},
            ],
            "session_4_date_time": "3:00 pm on 2 March, 2024",
            "session_4": [],
            "session_5": None,
        },
        "qa": [
            {"question": "What is the name of the puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
            {
                "question": "What breed is the puppy and when was it adopted?",
                "answer": "golden retriever, May 2023",
                "evidence": ["D1:1; D1:3"],
                "category": 1,
            },
            {"question": "When did Bob start the violin?", "answer": 2024, "evidence": ["D:2:1", "D"], "category": 2},
            {"question": "Where does the sister travel?", "answer": "Lisbon", "evidence": ["D3:1", "D9:9", "D3:1"], "category": 3},
            {"question": "What did Alice say about her cat?", "adversarial_answer": "cats", "evidence": ["D1:1"], "category": 5},
            {"question": "Unanswerable question", "answer": "n/a", "evidence": [], "category": 4},
            {"question": "Evidence of the wrong type", "answer": "x", "evidence": [42, None], "category": "4"},
            {"question": "No evidence key at all", "answer": "x", "category": 4},
            "not a question",
        ],
    }


def locomo_data() -> list[dict]:
    second = {
        "sample_id": "conv-2",
        "conversation": {
            "speaker_a": "Carol",
            "speaker_b": "Dan",
            "session_1_date_time": "9:05 am on 3 June, 2022",
            "session_1": [
                {"speaker": "Carol", "dia_id": "D1:1", "text": "I finished my first marathon in Berlin."},
                {"speaker": "Dan", "dia_id": "D1:2", "text": "Congratulations on the marathon! What was your time?"},
                {"speaker": "Carol", "dia_id": "D1:3", "text": "Four hours and ten minutes, I was exhausted."},
            ],
        },
        "qa": [
            {"question": "Which city hosted Carol's marathon?", "answer": "Berlin", "evidence": ["D1:1"], "category": 4},
            {"question": "What was the marathon time?", "answer": "4:10", "evidence": ["D1:3"], "category": 1},
        ],
    }
    return [locomo_sample(), second]


def lme_data() -> list[dict]:
    def sess(texts, answer_turns=()):
        out = []
        for i, (role, text) in enumerate(texts):
            t = {"role": role, "content": text}
            if answer_turns:
                t["has_answer"] = i in answer_turns
            out.append(t)
        return out

    item = {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What degree did I graduate with?",
        "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_a", "answer_1", "s_b", "s_a"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "bad date", "2023/05/22 (Mon) 08:00"],
        "haystack_sessions": [
            sess([("user", "How do I bake bread at home?"), ("assistant", "Mix flour, water, yeast and salt.")]),
            sess(
                [
                    ("user", "I graduated with a degree in Business Administration."),
                    ("assistant", "Congratulations on your Business Administration degree!"),
                    ("user", "Thanks, what jobs fit it?"),
                ],
                answer_turns=(0, 1),
            ),
            sess([("user", "Recommend a sci-fi novel."), ("assistant", "Try Dune.")]),
            sess([("user", "Another session reusing an id."), ("assistant", "Noted.")]),
        ],
        "answer_session_ids": ["answer_1", "missing_session"],
    }
    abstention = {
        "question_id": "q2_abs",
        "question_type": "single-session-user",
        "question": "What is my cat's name?",
        "answer": "You did not mention a cat.",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ["s_c"],
        "haystack_dates": ["2023/05/25 (Thu) 12:00"],
        "haystack_sessions": [sess([("user", "I like dogs."), ("assistant", "Dogs are great.")])],
        "answer_session_ids": [],
    }
    temporal = {
        "question_id": "q3",
        "question_type": "temporal-reasoning",
        "question": "Which sci-fi novel was recommended?",
        "answer": 7,
        "question_date": "2023/06/02 (Fri) 09:00",
        "haystack_session_ids": ["s_x", "answer_9"],
        "haystack_dates": ["2023/05/25 (Thu) 12:00", "2023/05/26 (Fri) 12:00"],
        "haystack_sessions": [
            sess([("user", "Weather is nice."), ("assistant", "Enjoy it.")]),
            sess([("user", "Recommend a sci-fi novel."), ("assistant", "Try Dune by Frank Herbert.")], answer_turns=(1,)),
        ],
        "answer_session_ids": ["answer_9"],
    }
    return [item, abstention, temporal]
