"""Small dense matrices as lists of rows."""


def shape(m):
    """(rows, cols) of a rectangular matrix; ValueError when rows differ in length."""
    rows = len(m)
    cols = len(m[0]) if rows else 0
    for row in m:
        if len(row) != cols:
            raise ValueError("ragged matrix")
    return rows, cols


def identity(n):
    """The n x n identity matrix."""
    return [[1 if i == j else 0 for j in range(n)] for i in range(n)]


def transpose(m):
    """Rows become columns."""
    rows, cols = shape(m)
    return [[m[i][j] for i in range(rows)] for j in range(cols)]


def multiply(a, b):
    """Matrix product a @ b."""
    a_rows, a_cols = shape(a)
    b_rows, b_cols = shape(b)
    if a_cols != b_rows:
        raise ValueError(f"cannot multiply {a_rows}x{a_cols} by {b_rows}x{b_cols}")
    result = []
    for i in range(a_rows):
        row = []
        for j in range(b_cols):
            total = 0
            for k in range(a_cols):
                total += a[i][k] * b[k][j]
            row.append(total)
        result.append(row)
    return result


def determinant(m):
    """Determinant by cofactor expansion along the first row."""
    rows, cols = shape(m)
    if rows != cols:
        raise ValueError("determinant needs a square matrix")
    if rows == 0:
        return 1
    if rows == 1:
        return m[0][0]
    total = 0
    for j in range(cols):
        minor = [row[:j] + row[j + 1:] for row in m[1:]]
        sign = -1 if j % 2 else 1
        total += sign * m[0][j] * determinant(minor)
    return total


def trace(m):
    """Sum of the main diagonal of a square matrix."""
    rows, cols = shape(m)
    if rows != cols:
        raise ValueError("trace needs a square matrix")
    return sum(m[i][i] for i in range(rows))
