"""Polynomials as coefficient lists, lowest degree first: [1, 0, 3] is 1 + 3x^2."""


def trim(coeffs):
    """Drop trailing zero coefficients (the zero polynomial is [])."""
    result = list(coeffs)
    while result and result[-1] == 0:
        result.pop()
    return result


def degree(coeffs):
    """The degree, or -1 for the zero polynomial."""
    return len(trim(coeffs)) - 1


def add(a, b):
    """a + b."""
    size = max(len(a), len(b))
    return trim([(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(size)])


def subtract(a, b):
    """a - b."""
    return add(a, [-c for c in b])


def multiply(a, b):
    """a * b."""
    if not a or not b:
        return []
    result = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            result[i + j] += x * y
    return trim(result)


def evaluate(coeffs, x):
    """The value at x (Horner's rule)."""
    total = 0
    for c in reversed(coeffs):
        total = total * x + c
    return total


def derivative(coeffs):
    """d/dx."""
    return trim([i * c for i, c in enumerate(coeffs)][1:])


def to_string(coeffs):
    """Human form, highest degree first: [1, -2, 3] -> "3x^2 - 2x + 1"."""
    terms = []
    for power in range(len(coeffs) - 1, -1, -1):
        c = coeffs[power]
        if c == 0:
            continue
        sign = "-" if c < 0 else "+"
        size = abs(c)
        if power == 0:
            body = str(size)
        else:
            body = ("" if size == 1 else str(size)) + ("x" if power == 1 else f"x^{power}")
        terms.append((sign, body))
    if not terms:
        return "0"
    first_sign, first_body = terms[0]
    text = ("-" if first_sign == "-" else "") + first_body
    for sign, body in terms[1:]:
        text += f" {sign} {body}"
    return text


def divide(a, b):
    """(quotient, remainder) of polynomial long division; ZeroDivisionError when b is zero."""
    b = trim(b)
    if not b:
        raise ZeroDivisionError("division by the zero polynomial")
    remainder = trim(a)
    quotient = [0] * max(len(remainder) - len(b) + 1, 0)
    while len(remainder) >= len(b):
        shift = len(remainder) - len(b)
        factor = remainder[-1] / b[-1]
        quotient[shift] = factor
        scaled = [0] * shift + [factor * c for c in b]
        remainder = [r - s for r, s in zip(remainder, scaled)]
        remainder = trim(remainder[:-1])
    return trim(quotient), remainder
