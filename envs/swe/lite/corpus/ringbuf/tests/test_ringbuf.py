import pytest

from ringbuf import RingBuffer, moving_average


def test_new_buffer_state():
    buf = RingBuffer(3)
    assert (buf.capacity, buf.overwrite, buf.slots, buf.head, buf.length) == (3, False, [None, None, None], 0, 0)


def test_bad_capacity():
    with pytest.raises(ValueError):
        RingBuffer(0)


def test_negative_capacity():
    with pytest.raises(ValueError, match="at least 1"):
        RingBuffer(-2, overwrite=True)


def test_capacity_one():
    buf = RingBuffer(1)
    buf.push("only")
    assert buf.pop() == "only"


def test_len():
    buf = RingBuffer(4)
    buf.extend("ab")
    assert len(buf) == 2


def test_len_empty_and_after_pop():
    buf = RingBuffer(3)
    assert len(buf) == 0
    buf.extend([7, 8, 9])
    buf.pop()
    assert len(buf) == 2


def test_len_overwrite_stays_at_capacity():
    buf = RingBuffer(2, overwrite=True)
    buf.extend(range(5))
    assert len(buf) == 2


def test_full():
    buf = RingBuffer(2)
    buf.extend("ab")
    assert buf.is_full() is True


def test_not_full():
    buf = RingBuffer(2)
    buf.push("a")
    assert buf.is_full() is False


def test_empty_not_full():
    assert RingBuffer(3).is_full() is False


def test_full_capacity_one():
    buf = RingBuffer(1)
    buf.push(0)
    assert buf.is_full() is True


def test_not_full_after_pop():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    buf.pop()
    assert buf.is_full() is False


def test_push_and_pop_fifo():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    assert [buf.pop(), buf.pop(), buf.pop()] == [1, 2, 3]


def test_push_stores_in_slots():
    buf = RingBuffer(4)
    buf.push("a")
    buf.push("b")
    assert (buf.slots, buf.head, buf.length) == (["a", "b", None, None], 0, 2)


def test_reject_when_full():
    buf = RingBuffer(2)
    buf.extend("ab")
    with pytest.raises(OverflowError):
        buf.push("c")


def test_reject_keeps_contents():
    buf = RingBuffer(2)
    buf.extend([5, 6])
    with pytest.raises(OverflowError, match="full"):
        buf.extend([7])
    assert buf.to_list() == [5, 6]


def test_overwrite_drops_oldest():
    buf = RingBuffer(3, overwrite=True)
    buf.extend([1, 2, 3, 4, 5])
    assert buf.to_list() == [3, 4, 5]


def test_overwrite_slots_and_head():
    buf = RingBuffer(3, overwrite=True)
    buf.extend([1, 2, 3, 4, 5])
    assert (buf.slots, buf.head) == ([4, 5, 3], 2)


def test_overwrite_capacity_one():
    buf = RingBuffer(1, overwrite=True)
    buf.extend("xyz")
    assert buf.pop() == "z"


def test_overwrite_then_pop_oldest():
    buf = RingBuffer(2, overwrite=True)
    buf.extend([10, 20, 30])
    assert buf.pop() == 20
    assert buf.pop() == 30


def test_wraps_around():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    buf.pop()
    buf.pop()
    buf.extend([4, 5])
    assert buf.to_list() == [3, 4, 5]


def test_wrapped_slots():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    buf.pop()
    buf.pop()
    buf.extend([4, 5])
    assert (buf.slots, buf.head, buf.length) == ([4, 5, 3], 2, 3)


def test_pop_empty():
    with pytest.raises(IndexError):
        RingBuffer(1).pop()


def test_pop_until_empty():
    buf = RingBuffer(2)
    buf.extend("ab")
    buf.pop()
    buf.pop()
    with pytest.raises(IndexError, match="empty"):
        buf.pop()


def test_pop_clears_slot():
    buf = RingBuffer(3)
    buf.extend([1, 2])
    assert buf.pop() == 1
    assert (buf.slots, buf.head, buf.length) == ([None, 2, None], 1, 1)


def test_pop_after_wrap():
    buf = RingBuffer(2)
    buf.extend([1, 2])
    buf.pop()
    buf.push(3)
    buf.pop()
    buf.push(4)
    assert [buf.pop(), buf.pop()] == [3, 4]


def test_peek_oldest():
    buf = RingBuffer(3)
    buf.extend("xyz")
    assert buf.peek() == "x"


def test_peek_middle():
    buf = RingBuffer(4)
    buf.extend("wxyz")
    assert buf.peek(1) == "x"
    assert buf.peek(3) == "z"


def test_peek_negative():
    buf = RingBuffer(3)
    buf.extend("xyz")
    assert buf.peek(-1) == "z"


def test_peek_most_negative():
    buf = RingBuffer(5)
    buf.extend("xyz")
    assert buf.peek(-3) == "x"
    assert buf.peek(-2) == "y"


def test_peek_after_wrap():
    buf = RingBuffer(3, overwrite=True)
    buf.extend([1, 2, 3, 4])
    assert [buf.peek(0), buf.peek(2), buf.peek(-1)] == [2, 4, 4]


def test_peek_does_not_remove():
    buf = RingBuffer(2)
    buf.extend([8, 9])
    buf.peek()
    assert len(buf) == 2


def test_peek_out_of_range():
    buf = RingBuffer(3)
    buf.push(1)
    with pytest.raises(IndexError):
        buf.peek(1)


def test_peek_negative_out_of_range():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    with pytest.raises(IndexError, match="out of range"):
        buf.peek(-4)


def test_peek_empty():
    with pytest.raises(IndexError):
        RingBuffer(2).peek(0)


def test_to_list_empty():
    assert RingBuffer(3).to_list() == []


def test_to_list_partial():
    buf = RingBuffer(5)
    buf.extend([3, 1, 2])
    assert buf.to_list() == [3, 1, 2]


def test_extend_nothing():
    buf = RingBuffer(2)
    buf.extend([])
    assert (buf.to_list(), len(buf)) == ([], 0)


def test_clear():
    buf = RingBuffer(2)
    buf.extend("ab")
    buf.clear()
    assert buf.to_list() == []
    assert len(buf) == 0


def test_clear_resets_state():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    buf.pop()
    buf.clear()
    assert (buf.slots, buf.head, buf.length) == ([None, None, None], 0, 0)


def test_clear_then_reuse():
    buf = RingBuffer(2)
    buf.extend("ab")
    buf.pop()
    buf.clear()
    buf.extend("cd")
    assert [buf.pop(), buf.pop()] == ["c", "d"]


def test_moving_average():
    assert moving_average([1, 2, 3, 4, 5], 2) == [1.5, 2.5, 3.5, 4.5]


def test_moving_average_window_one():
    assert moving_average([4, 8], 1) == [4.0, 8.0]


def test_moving_average_window_three_with_negatives():
    assert moving_average([3, -3, 6, 0, 9], 3) == [2.0, 1.0, 5.0]


def test_moving_average_window_equals_length():
    assert moving_average([2, 4, 6], 3) == [4.0]


def test_moving_average_short_input():
    assert moving_average([1, 2], 3) == []
    assert moving_average([], 1) == []


def test_moving_average_bad_window():
    with pytest.raises(ValueError):
        moving_average([1], 0)


def test_moving_average_negative_window():
    with pytest.raises(ValueError, match="at least 1"):
        moving_average([1, 2, 3], -1)
