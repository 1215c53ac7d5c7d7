"""Money as integer cents: parse "$1,234.56", format, split fairly, apply percentages, add tax."""


def parse_amount(text):
    """"$1,234.56", "-3.5" or "(12.00)" (accounting negative) -> cents."""
    text = text.strip()
    negative = False
    if text.startswith("(") and text.endswith(")"):
        negative, text = True, text[1:-1]
    if text.startswith("-"):
        negative, text = not negative, text[1:]
    text = text.lstrip("$").replace(",", "")
    whole, _, frac = text.partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or len(frac) > 2:
        raise ValueError(f"not an amount: {text!r}")
    cents = int(whole) * 100 + int(frac.ljust(2, "0") or 0)
    return -cents if negative else cents


def format_amount(cents, symbol="$"):
    """Cents as "$1,234.56" (negative as "-$1,234.56")."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    grouped = f"{whole:,}"
    return f"{sign}{symbol}{grouped}.{frac:02d}"


def split(cents, parts):
    """Split an amount into `parts` shares differing by at most one cent, larger shares first."""
    if parts < 1:
        raise ValueError("parts must be >= 1")
    base, remainder = divmod(cents, parts)
    return [base + 1 if i < remainder else base for i in range(parts)]


def allocate(cents, weights):
    """Split by integer weights; leftover cents go to the largest fractional remainders (first on ties)."""
    total = sum(weights)
    if total <= 0:
        raise ValueError("weights must sum to a positive number")
    shares = [cents * w // total for w in weights]
    remainders = [cents * w % total for w in weights]
    leftover = cents - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: (-remainders[i], i))
    for i in order[:leftover]:
        shares[i] += 1
    return shares


def percent_of(cents, percent):
    """`percent` % of an amount, rounded half up to a cent."""
    value = cents * percent
    return (value + 50) // 100 if value >= 0 else -((-value + 50) // 100)


def with_tax(cents, rate_percent):
    """The amount plus tax at `rate_percent`, tax rounded half up."""
    return cents + percent_of(cents, rate_percent)


def total(amounts):
    """Sum of a list of amount strings, formatted."""
    return format_amount(sum(parse_amount(a) for a in amounts))
