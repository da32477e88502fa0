"""Memory and intention ids: random by default, repeatable inside ``seeded_ids``."""

import threading

import pytest
from core_helpers import open_mem

from zenbrain import Scope
from zenbrain.errors import ValidationError
from zenbrain.ids import new_id, seeded_ids


def _stored_ids(tmp_path, name: str) -> list[str]:
    mem = open_mem(str(tmp_path / f"{name}.db"))
    try:
        items = mem.store_many([{"content": f"note number {i}"} for i in range(5)], Scope("u"))
        intention = mem.intend("water the plants", Scope("u"), cue="plants")
        return [i.id for i in items] + [intention["id"]]
    finally:
        mem.close()


def test_seeded_block_repeats_memory_and_intention_ids(tmp_path):
    with seeded_ids(7):
        first = _stored_ids(tmp_path, "a")
    with seeded_ids(7):
        again = _stored_ids(tmp_path, "b")
    with seeded_ids(8):
        other = _stored_ids(tmp_path, "c")
    assert first == again
    assert len(set(first)) == len(first)
    assert set(first).isdisjoint(other)


def test_ids_are_random_outside_a_seeded_block(tmp_path):
    with seeded_ids(7):
        seeded = _stored_ids(tmp_path, "a")
    assert set(_stored_ids(tmp_path, "b")).isdisjoint(seeded)
    assert set(_stored_ids(tmp_path, "c")).isdisjoint(_stored_ids(tmp_path, "d"))


def test_ids_are_uuid4_hex_and_blocks_nest():
    with seeded_ids(1):
        a = new_id()
        with seeded_ids(2):
            inner = new_id()
        b = new_id()
    with seeded_ids(1):
        assert [new_id(), new_id()] == [a, b]
    with seeded_ids(2):
        assert new_id() == inner
    assert len(a) == 32 and int(a, 16) >= 0 and a[12] == "4"


def test_a_seeded_block_does_not_reach_other_threads():
    seen: list[str] = []
    with seeded_ids(3):
        t = threading.Thread(target=lambda: seen.append(new_id()))
        t.start()
        t.join()
        mine = new_id()
    with seeded_ids(3):
        assert new_id() == mine  # the other thread did not draw from this block's generator
    assert seen[0] != mine


@pytest.mark.parametrize("bad", [1.5, "7", True, None])
def test_seed_must_be_an_integer(bad):
    with pytest.raises(ValidationError), seeded_ids(bad):
        pass
