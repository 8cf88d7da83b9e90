"""tests/_slots.py: one heavy subprocess at a time across the workers (an exclusive lock, released on exit)."""

import threading
import time

import pytest

from _slots import fcntl, heavy_subprocess


@pytest.mark.skipif(fcntl is None, reason="no fcntl: the slot is a no-op")
def test_the_slot_is_held_by_one_at_a_time():
    order = []
    inside = threading.Event()

    def first():
        with heavy_subprocess():
            order.append("a in")
            inside.set()
            time.sleep(0.3)
            order.append("a out")
    t = threading.Thread(target=first)
    t.start()
    inside.wait(10)
    with heavy_subprocess():           # waits for the other holder (another open file: another lock owner)
        order.append("b in")
    t.join()
    assert order == ["a in", "a out", "b in"]
    with heavy_subprocess():           # released: taken again at once
        order.append("again")
    assert order[-1] == "again"
