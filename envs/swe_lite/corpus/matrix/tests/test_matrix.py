import pytest

from matrix import determinant, identity, multiply, shape, trace, transpose


def test_shape():
    assert shape([[1, 2, 3], [4, 5, 6]]) == (2, 3)


def test_shape_rejects_ragged():
    with pytest.raises(ValueError):
        shape([[1, 2], [3]])


def test_identity():
    assert identity(3) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_transpose():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]


def test_multiply():
    assert multiply([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]


def test_multiply_non_square():
    assert multiply([[1, 2, 3]], [[1], [2], [3]]) == [[14]]


def test_multiply_rejects_mismatch():
    with pytest.raises(ValueError):
        multiply([[1, 2]], [[1, 2]])


def test_determinant_2x2():
    assert determinant([[3, 8], [4, 6]]) == -14


def test_determinant_3x3():
    assert determinant([[6, 1, 1], [4, -2, 5], [2, 8, 7]]) == -306


def test_determinant_1x1():
    assert determinant([[7]]) == 7


def test_determinant_rejects_non_square():
    with pytest.raises(ValueError):
        determinant([[1, 2]])


def test_trace():
    assert trace([[1, 9], [9, 4]]) == 5
