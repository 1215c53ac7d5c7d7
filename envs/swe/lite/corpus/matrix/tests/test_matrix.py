import pytest

from matrix import determinant, identity, multiply, shape, trace, transpose


def test_shape():
    assert shape([[1, 2, 3], [4, 5, 6]]) == (2, 3)


def test_shape_column():
    assert shape([[1], [2], [3], [4]]) == (4, 1)


def test_shape_empty():
    assert shape([]) == (0, 0)
    assert shape([[]]) == (1, 0)


def test_shape_rejects_ragged():
    with pytest.raises(ValueError):
        shape([[1, 2], [3]])


def test_shape_rejects_longer_last_row():
    with pytest.raises(ValueError):
        shape([[1], [2], [3, 4]])


def test_identity():
    assert identity(2) == [[1, 0], [0, 1]]


def test_identity_three():
    assert identity(3) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_identity_one():
    assert identity(1) == [[1]]


def test_identity_empty():
    assert identity(0) == []


def test_transpose():
    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]


def test_transpose_square():
    assert transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]


def test_transpose_row_to_column():
    assert transpose([[7, 8, 9]]) == [[7], [8], [9]]


def test_transpose_empty():
    assert transpose([]) == []


def test_transpose_rejects_ragged():
    with pytest.raises(ValueError):
        transpose([[1, 2], [3]])


def test_multiply():
    assert multiply([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]


def test_multiply_row_by_column():
    assert multiply([[1, 2, 3]], [[1], [2], [3]]) == [[14]]


def test_multiply_column_by_row():
    assert multiply([[1], [2]], [[3, 4]]) == [[3, 4], [6, 8]]


def test_multiply_non_square():
    assert multiply([[1, 0, 2], [-1, 3, 1]], [[3, 1], [2, 1], [1, 0]]) == [[5, 1], [4, 2]]


def test_multiply_by_identity():
    assert multiply([[2, -3], [5, 7]], identity(2)) == [[2, -3], [5, 7]]


def test_multiply_rejects_mismatch():
    with pytest.raises(ValueError):
        multiply([[1, 2]], [[1, 2]])


def test_multiply_rejects_mismatch_message():
    with pytest.raises(ValueError, match="cannot multiply 2x3 by 2x2"):
        multiply([[1, 2, 3], [4, 5, 6]], [[1, 2], [3, 4]])


def test_determinant_2x2():
    assert determinant([[3, 8], [4, 6]]) == -14


def test_determinant_2x2_swapped_rows():
    assert determinant([[4, 6], [3, 8]]) == 14


def test_determinant_3x3():
    assert determinant([[6, 1, 1], [4, -2, 5], [2, 8, 7]]) == -306


def test_determinant_3x3_upper_triangular():
    assert determinant([[2, 5, 7], [0, 3, 1], [0, 0, 4]]) == 24


def test_determinant_1x1():
    assert determinant([[7]]) == 7
    assert determinant([[-3]]) == -3


def test_determinant_empty():
    assert determinant([]) == 1


def test_determinant_singular():
    assert determinant([[1, 2, 3], [4, 5, 6], [7, 8, 9]]) == 0


def test_determinant_4x4():
    assert determinant([[1, 0, 2, -1], [3, 0, 0, 5], [2, 1, 4, -3], [1, 0, 5, 0]]) == 30


def test_determinant_rejects_non_square():
    with pytest.raises(ValueError):
        determinant([[1, 2]])


def test_determinant_rejects_tall():
    with pytest.raises(ValueError):
        determinant([[1], [2]])


def test_trace():
    assert trace([[1, 9], [9, 4]]) == 5


def test_trace_3x3_negative():
    assert trace([[-1, 2, 3], [4, -5, 6], [7, 8, 10]]) == 4


def test_trace_single_and_empty():
    assert trace([[6]]) == 6
    assert trace([]) == 0


def test_trace_rejects_non_square():
    with pytest.raises(ValueError):
        trace([[1, 2, 3], [4, 5, 6]])
