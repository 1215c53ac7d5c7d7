import pytest

from pqueue import PriorityQueue, drain


def filled(*pairs):
    queue = PriorityQueue()
    for item, priority in pairs:
        queue.push(item, priority)
    return queue


def test_empty_len():
    assert len(PriorityQueue()) == 0


def test_len_after_pushes():
    assert len(filled(("a", 1), ("b", 1), ("c", 0))) == 3


def test_len_after_pops():
    queue = filled(("a", 1), ("b", 2), ("c", 3))
    queue.pop()
    assert len(queue) == 2


def test_pop_empty():
    with pytest.raises(IndexError):
        PriorityQueue().pop()


def test_pop_after_last_item():
    queue = filled(("a", 1))
    queue.pop()
    with pytest.raises(IndexError):
        queue.pop()


def test_peek_empty():
    with pytest.raises(IndexError):
        PriorityQueue().peek()


def test_peek_after_last_item():
    queue = filled(("a", 1), ("b", 2))
    queue.pop()
    queue.pop()
    with pytest.raises(IndexError):
        queue.peek()


def test_single_item():
    assert filled(("a", 5)).pop() == "a"


def test_push_counts_entries():
    queue = filled(("a", 5), ("b", 5))
    assert queue.counter == 2


def test_push_keeps_heap_entries():
    assert filled(("a", 5), ("b", 1)).heap == [(1, 1, "b"), (5, 0, "a")]


def test_push_sifts_up_to_the_root():
    assert filled(("a", 3), ("b", 2), ("c", 1)).heap == [(1, 2, "c"), (3, 0, "a"), (2, 1, "b")]


def test_push_larger_stays_below():
    assert filled(("a", 1), ("b", 2), ("c", 3), ("d", 0)).heap == [
        (0, 3, "d"), (1, 0, "a"), (3, 2, "c"), (2, 1, "b")]


def test_pop_smallest_first():
    assert filled(("a", 5), ("b", 1), ("c", 3)).pop() == "b"


def test_pop_negative_priority():
    assert filled(("a", 0), ("b", -2), ("c", -1)).pop() == "b"


def test_pop_twice():
    queue = filled(("a", 5), ("b", 1), ("c", 3), ("d", 4))
    assert [queue.pop(), queue.pop()] == ["b", "c"]


def test_peek():
    assert filled(("a", 2), ("b", 1), ("c", 3)).peek() == "b"


def test_peek_does_not_remove():
    queue = filled(("a", 2), ("b", 1))
    assert queue.peek() == "b"
    assert len(queue) == 2


def test_peek_after_pop():
    queue = filled(("a", 2), ("b", 1), ("c", 3))
    queue.pop()
    assert queue.peek() == "a"


def test_drain_sorted():
    queue = filled(("e", 5), ("a", 1), ("d", 4), ("b", 2), ("c", 3), ("f", 6), ("g", 0))
    assert drain(queue) == ["g", "a", "b", "c", "d", "e", "f"]


def test_drain_descending_inserts():
    queue = filled(*[(str(n), n) for n in range(9, -1, -1)])
    assert drain(queue) == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]


def test_drain_empty():
    assert drain(PriorityQueue()) == []


def test_drain_empties_queue():
    queue = filled(("a", 1), ("b", 0))
    drain(queue)
    assert len(queue) == 0


def test_fifo_for_equal_priorities():
    assert drain(filled(("x", 1), ("y", 1), ("z", 1))) == ["x", "y", "z"]


def test_fifo_among_mixed_priorities():
    assert drain(filled(("a", 2), ("b", 1), ("c", 2), ("d", 1), ("e", 2))) == ["b", "d", "a", "c", "e"]


def test_right_child_smaller():
    queue = filled(("r", 0), ("x", 5), ("y", 3), ("z", 9))
    queue.pop()
    assert queue.heap == [(3, 2, "y"), (5, 1, "x"), (9, 3, "z")]


def test_interleaved_push_pop():
    queue = filled(("a", 3), ("b", 1))
    first = queue.pop()
    queue.push("c", 0)
    assert [first, queue.pop(), queue.pop()] == ["b", "c", "a"]
