"""Semantic version strings: parse, compare, bump (no build metadata)."""


def parse(version):
    """Split "1.2.3-rc.1" into (major, minor, patch, prerelease tuple)."""
    core, _, pre = version.partition("-")
    parts = core.split(".")
    if len(parts) != 3:
        raise ValueError(f"expected MAJOR.MINOR.PATCH, got {version!r}")
    numbers = []
    for part in parts:
        if not part.isdigit():
            raise ValueError(f"non-numeric component {part!r}")
        if len(part) > 1 and part.startswith("0"):
            raise ValueError(f"leading zero in {part!r}")
        numbers.append(int(part))
    prerelease = tuple(pre.split(".")) if pre else ()
    return numbers[0], numbers[1], numbers[2], prerelease


def _compare_identifiers(a, b):
    """Compare two prerelease identifiers: numbers numerically and before words."""
    if a.isdigit() and b.isdigit():
        return (int(a) > int(b)) - (int(a) < int(b))
    if a.isdigit():
        return -1
    if b.isdigit():
        return 1
    return (a > b) - (a < b)


def compare(a, b):
    """-1, 0 or 1 as version `a` sorts before, equal to or after `b`."""
    pa, pb = parse(a), parse(b)
    if pa[:3] != pb[:3]:
        return -1 if pa[:3] < pb[:3] else 1
    pre_a, pre_b = pa[3], pb[3]
    if not pre_a and not pre_b:
        return 0
    if not pre_a:
        return 1
    if not pre_b:
        return -1
    for x, y in zip(pre_a, pre_b):
        result = _compare_identifiers(x, y)
        if result != 0:
            return result
    return (len(pre_a) > len(pre_b)) - (len(pre_a) < len(pre_b))


def bump(version, part):
    """Increase the "major", "minor" or "patch" component, resetting the lower ones."""
    major, minor, patch, _ = parse(version)
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch + 1}"
    raise ValueError(f"unknown part {part!r}")
