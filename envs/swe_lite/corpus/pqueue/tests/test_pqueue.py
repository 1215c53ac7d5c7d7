import pytest

from pqueue import PriorityQueue, drain


def filled(*pairs):
    queue = PriorityQueue()
    for item, priority in pairs:
        queue.push(item, priority)
    return queue


def test_empty_len():
    assert len(PriorityQueue()) == 0


def test_pop_empty():
    with pytest.raises(IndexError):
        PriorityQueue().pop()


def test_peek_empty():
    with pytest.raises(IndexError):
        PriorityQueue().peek()


def test_single_item():
    assert filled(("a", 5)).pop() == "a"


def test_pop_smallest_first():
    assert filled(("a", 5), ("b", 1), ("c", 3)).pop() == "b"


def test_peek_does_not_remove():
    queue = filled(("a", 2), ("b", 1))
    assert queue.peek() == "b"
    assert len(queue) == 2


def test_drain_sorted():
    queue = filled(("e", 5), ("a", 1), ("d", 4), ("b", 2), ("c", 3), ("f", 6), ("g", 0))
    assert drain(queue) == ["g", "a", "b", "c", "d", "e", "f"]


def test_fifo_for_equal_priorities():
    assert drain(filled(("x", 1), ("y", 1), ("z", 1))) == ["x", "y", "z"]


def test_interleaved_push_pop():
    queue = filled(("a", 3), ("b", 1))
    first = queue.pop()
    queue.push("c", 0)
    assert [first, queue.pop(), queue.pop()] == ["b", "c", "a"]


def test_len_after_pops():
    queue = filled(("a", 1), ("b", 2), ("c", 3))
    queue.pop()
    assert len(queue) == 2
