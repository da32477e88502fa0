"""Time expressions as windows, with phrasings as they occur in recorded conversations."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from zenbrain.retrieval.dates import TimeWindow, event_window, query_window, resolve
from zenbrain.retrieval.query import classify


def ts(y: int, m: int, d: int, hh: int = 0, mm: int = 0, ss: int = 0) -> float:
    return datetime(y, m, d, hh, mm, ss, tzinfo=UTC).timestamp()


SESSION = ts(2023, 5, 8, 13, 56)  # "1:56 pm on 8 May, 2023", a Monday


def days(text: str, reference: float | None = SESSION) -> list[tuple[str, date, date]]:
    return [(m.text, m.first, m.last) for m in resolve(text, reference)]


def window_days(w: TimeWindow | None) -> tuple[date | None, date | None] | None:
    if w is None:
        return None
    f = lambda t: None if t is None else datetime.fromtimestamp(t, tz=UTC).date()
    return f(w.start), f(w.end)


# --------------------------------------------------------------------------- stored turns


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("I went to a LGBTQ support group yesterday and it was so powerful.", date(2023, 5, 7), date(2023, 5, 7)),
        ("I wanted to tell you about my school event last week.", date(2023, 5, 1), date(2023, 5, 7)),
        ("Yeah, I painted that lake sunrise last year!", date(2022, 1, 1), date(2022, 12, 31)),
        ("We're thinking about going camping next month.", date(2023, 6, 1), date(2023, 6, 30)),
        ("I ran a charity race for mental health last Saturday", date(2023, 5, 6), date(2023, 5, 6)),
        ("I started playing acoustic guitar about five years ago", date(2018, 1, 1), date(2018, 12, 31)),
        ("Wanna do a family outing this summer?", date(2023, 6, 1), date(2023, 8, 31)),
        ("Guess what - I got a puppy two weeks ago!", date(2023, 4, 21), date(2023, 4, 27)),
        ("this pride parade I went to a few weeks ago.", date(2023, 4, 7), date(2023, 4, 27)),
        ("Max and I had a blast on our camping trip last summer.", date(2022, 6, 1), date(2022, 8, 31)),
        ("The official opening night is tomorrow.", date(2023, 5, 9), date(2023, 5, 9)),
        ("Our latest work from last weekend.", date(2023, 5, 6), date(2023, 5, 7)),
        ("I'm hiking with some buddies this weekend.", date(2023, 5, 13), date(2023, 5, 14)),
        ("Last Monday I got to teach people vegan ice cream recipes", date(2023, 5, 1), date(2023, 5, 1)),
        ("A friend made it for my 18th birthday ten years ago.", date(2013, 1, 1), date(2013, 12, 31)),
        ("I went to an LGBTQ conference two days ago", date(2023, 5, 6), date(2023, 5, 6)),
    ],
)
def test_relative_phrases_resolve_against_the_session_date(text, first, last):
    found = days(text)
    assert len(found) == 1
    assert found[0][1:] == (first, last)
    assert event_window(text, SESSION) == resolve(text, SESSION)[0].window


def test_relative_phrases_need_a_reference():
    assert resolve("I went to a LGBTQ support group yesterday", None) == []
    assert event_window("my school event last week", None) is None


@pytest.mark.parametrize(
    "text",
    [
        "What game has Nate been playing nonstop? Cyberpunk 2077",  # a title, not a year
        "I may go to the beach",  # the verb, not the month
        "My kids are so excited about summer break!",  # a season without a preposition
        "Last night was amazing!".replace("Last night", "The night"),  # "night" alone is no date
        "I got 100 likes",
        "",
    ],
)
def test_words_that_are_not_dates_stay_text(text):
    assert resolve(text, SESSION) == []


def test_absolute_dates_in_text_need_no_reference():
    assert days("I'll be there on 8 May, 2023", None) == [("8 May, 2023", date(2023, 5, 8), date(2023, 5, 8))]
    assert days("released on October 13, 2023.", None)[0][1:] == (date(2023, 10, 13), date(2023, 10, 13))
    assert days("back in 2019-07-04", None)[0][1:] == (date(2019, 7, 4), date(2019, 7, 4))
    assert days("we met 31 February, 2023", None) == []  # no such day


def test_mentions_come_in_text_order_with_positions():
    text = "Yesterday I booked the trip for next month."
    found = resolve(text, SESSION)
    assert [m.text for m in found] == ["Yesterday", "next month"]
    assert all(text[m.start_char : m.end_char] == m.text for m in found)
    assert [m.relative for m in found] == [True, True]


# --------------------------------------------------------------------------- questions


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        # the direction word does not govern the date: the month itself, not an open range
        ("What did Maria do in December 2023 after a long time?", date(2023, 12, 1), date(2023, 12, 31)),
        ("What type of workout class did Maria start doing in December 2023?", date(2023, 12, 1), date(2023, 12, 31)),
        ("What painting did Melanie show to Caroline on October 13, 2023?", date(2023, 10, 13), date(2023, 10, 13)),
        ("What did Gina find for her clothing store on 1 February, 2023?", date(2023, 2, 1), date(2023, 2, 1)),
        ("What did John do the week before August 3, 2023 involving his kids?", date(2023, 7, 27), date(2023, 8, 2)),
        ("What is the name of Maria's puppy she got two weeks before August 11, 2023?", date(2023, 7, 25), date(2023, 7, 31)),
        ("What did Joanna contribute to on the Sunday before October 25, 2022?", date(2022, 10, 23), date(2022, 10, 23)),
        ("What did Maria participate in last weekend before April 10, 2023?", date(2023, 4, 8), date(2023, 4, 9)),
        ("Which tournament did Nate win in the beginning of November 2022?", date(2022, 11, 1), date(2022, 11, 10)),
        ("Was the first half of September 2022 a good month career-wise?", date(2022, 9, 1), date(2022, 9, 15)),
        ("What state did Joanna visit in summer 2021?", date(2021, 6, 1), date(2021, 8, 31)),
        ("How many times has Melanie gone to the beach in 2023?", date(2023, 1, 1), date(2023, 12, 31)),
        ("What did Joanna just finish last Friday on 23 January, 2022?", date(2022, 1, 21), date(2022, 1, 21)),
        ("between March 2023 and June 2023, who called?", date(2023, 3, 1), date(2023, 6, 30)),
    ],
)
def test_question_windows_are_closed_where_the_text_names_a_period(question, first, last):
    assert window_days(query_window(question)) == (first, last)


def test_month_or_season_without_a_year_needs_the_time_of_asking():
    asked = ts(2023, 8, 20)
    assert query_window("When did Melanie go camping in June?") is None
    assert window_days(query_window("When did Melanie go camping in June?", asked)) == (date(2023, 6, 1), date(2023, 6, 30))
    # a month not yet reached this year is last year's
    assert window_days(query_window("Which outdoor spot did Joanna visit in October?", asked)) == (
        date(2022, 10, 1),
        date(2022, 10, 31),
    )
    assert window_days(query_window("a pride parade during the summer?", asked)) == (date(2023, 6, 1), date(2023, 8, 31))


def test_governing_direction_words_open_the_window_at_the_period_edge():
    assert query_window("what happened after May 2023") == TimeWindow(ts(2023, 5, 31, 23, 59, 59), None)
    assert query_window("what happened before June 2023") == TimeWindow(None, ts(2023, 6, 1))
    assert query_window("anything since 2022?") == TimeWindow(ts(2022, 1, 1), None)
    assert query_window("everything until 8 May, 2023") == TimeWindow(None, ts(2023, 5, 8, 23, 59, 59))


def test_classify_reads_relative_questions_against_the_reference():
    info = classify("What did I do last week?", ts(2023, 5, 8))
    assert window_days(info.window) == (date(2023, 5, 1), date(2023, 5, 7))
    assert classify("What did I do last week?").window is None
    assert classify("What happened in December 2023 after a long time?").window.start == ts(2023, 12, 1)


def test_window_contains_and_overlaps():
    w = TimeWindow(ts(2023, 5, 1), ts(2023, 5, 31))
    assert w.contains(ts(2023, 5, 8)) and not w.contains(ts(2023, 6, 2))
    assert w.overlaps(TimeWindow(ts(2023, 5, 30), None)) and not w.overlaps(TimeWindow(None, ts(2023, 4, 1)))
