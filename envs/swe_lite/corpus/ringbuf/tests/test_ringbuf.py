import pytest

from ringbuf import RingBuffer, moving_average


def test_push_and_pop_fifo():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    assert [buf.pop(), buf.pop()] == [1, 2]


def test_len():
    buf = RingBuffer(4)
    buf.extend("ab")
    assert len(buf) == 2


def test_full():
    buf = RingBuffer(2)
    buf.extend("ab")
    assert buf.is_full()


def test_not_full():
    buf = RingBuffer(2)
    buf.push("a")
    assert not buf.is_full()


def test_reject_when_full():
    buf = RingBuffer(2)
    buf.extend("ab")
    with pytest.raises(OverflowError):
        buf.push("c")


def test_overwrite_drops_oldest():
    buf = RingBuffer(3, overwrite=True)
    buf.extend([1, 2, 3, 4, 5])
    assert buf.to_list() == [3, 4, 5]


def test_overwrite_keeps_length():
    buf = RingBuffer(2, overwrite=True)
    buf.extend(range(5))
    assert len(buf) == 2


def test_wraps_around():
    buf = RingBuffer(3)
    buf.extend([1, 2, 3])
    buf.pop()
    buf.pop()
    buf.extend([4, 5])
    assert buf.to_list() == [3, 4, 5]


def test_pop_empty():
    with pytest.raises(IndexError):
        RingBuffer(1).pop()


def test_peek_oldest():
    buf = RingBuffer(3)
    buf.extend("xyz")
    assert buf.peek() == "x"


def test_peek_negative():
    buf = RingBuffer(3)
    buf.extend("xyz")
    assert buf.peek(-1) == "z"


def test_peek_out_of_range():
    buf = RingBuffer(3)
    buf.push(1)
    with pytest.raises(IndexError):
        buf.peek(1)


def test_clear():
    buf = RingBuffer(2)
    buf.extend("ab")
    buf.clear()
    assert buf.to_list() == [] and len(buf) == 0


def test_bad_capacity():
    with pytest.raises(ValueError):
        RingBuffer(0)


def test_moving_average():
    assert moving_average([1, 2, 3, 4, 5], 2) == [1.5, 2.5, 3.5, 4.5]


def test_moving_average_window_one():
    assert moving_average([4, 8], 1) == [4.0, 8.0]


def test_moving_average_short_input():
    assert moving_average([1, 2], 3) == []


def test_moving_average_bad_window():
    with pytest.raises(ValueError):
        moving_average([1], 0)
