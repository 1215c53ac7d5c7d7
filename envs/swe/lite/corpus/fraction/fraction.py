"""Exact rational numbers kept in lowest terms with a positive denominator."""


def gcd(a, b):
    """Greatest common divisor of two ints (always >= 0)."""
    a, b = abs(a), abs(b)
    while b:
        a, b = b, a % b
    return a


class Fraction:
    """numerator / denominator, normalized on creation."""

    def __init__(self, numerator, denominator=1):
        if denominator == 0:
            raise ZeroDivisionError("denominator is zero")
        if denominator < 0:
            numerator, denominator = -numerator, -denominator
        common = gcd(numerator, denominator)
        self.num = numerator // common
        self.den = denominator // common

    @classmethod
    def parse(cls, text):
        """"3/4", "-2" or "1 1/2" (a mixed number) -> Fraction."""
        text = text.strip()
        whole = 0
        if " " in text:
            head, text = text.split(None, 1)
            whole = int(head)
        if "/" in text:
            num, den = text.split("/")
            value = cls(int(num), int(den))
        else:
            value = cls(int(text))
        if whole < 0:
            return cls(whole) - value
        return cls(whole) + value

    def __add__(self, other):
        return Fraction(self.num * other.den + other.num * self.den, self.den * other.den)

    def __sub__(self, other):
        return Fraction(self.num * other.den - other.num * self.den, self.den * other.den)

    def __mul__(self, other):
        return Fraction(self.num * other.num, self.den * other.den)

    def __truediv__(self, other):
        if other.num == 0:
            raise ZeroDivisionError("division by zero")
        return Fraction(self.num * other.den, self.den * other.num)

    def __eq__(self, other):
        return (self.num, self.den) == (other.num, other.den)

    def __lt__(self, other):
        return self.num * other.den < other.num * self.den

    def __le__(self, other):
        return self == other or self < other

    def __str__(self):
        if self.den == 1:
            return str(self.num)
        return f"{self.num}/{self.den}"

    def __repr__(self):
        return f"Fraction({self.num}, {self.den})"

    def mixed(self):
        """"7/2" -> "3 1/2"; proper fractions and integers print as with str()."""
        if abs(self.num) < self.den or self.den == 1:
            return str(self)
        whole = abs(self.num) // self.den
        rest = abs(self.num) % self.den
        sign = "-" if self.num < 0 else ""
        if rest == 0:
            return f"{sign}{whole}"
        return f"{sign}{whole} {rest}/{self.den}"

    def to_float(self):
        """The nearest float."""
        return self.num / self.den


def mean(values):
    """The exact mean of a non-empty list of Fractions."""
    if not values:
        raise ValueError("mean of an empty list")
    total = Fraction(0)
    for value in values:
        total = total + value
    return total / Fraction(len(values))
