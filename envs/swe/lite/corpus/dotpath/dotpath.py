"""Nested dicts and lists addressed by dotted paths like "servers.0.host"; flatten and unflatten."""


def split_path(path):
    """"a.b.0" -> ["a", "b", 0] (all-digit parts become list indexes); empty parts are errors."""
    if not path:
        return []
    parts = []
    for part in path.split("."):
        if not part:
            raise ValueError(f"empty segment in {path!r}")
        parts.append(int(part) if part.isdigit() else part)
    return parts


def get_path(data, path, default=None):
    """The value at `path`, or `default` when any step is missing."""
    current = data
    for part in split_path(path):
        if isinstance(part, int) and isinstance(current, list):
            if part >= len(current):
                return default
            current = current[part]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            return default
    return current


def set_path(data, path, value):
    """Set the value at `path`, creating dicts (or lists for numeric parts) along the way."""
    parts = split_path(path)
    if not parts:
        raise ValueError("cannot set the root")
    current = data
    for part, following in zip(parts, parts[1:]):
        empty = [] if isinstance(following, int) else {}
        if isinstance(current, list):
            while len(current) <= part:
                current.append(None)
            if current[part] is None:
                current[part] = empty
            current = current[part]
        else:
            current = current.setdefault(part, empty)
    last = parts[-1]
    if isinstance(current, list):
        while len(current) <= last:
            current.append(None)
    current[last] = value
    return data


def flatten(data, prefix=""):
    """{"a": {"b": 1}, "c": [2]} -> {"a.b": 1, "c.0": 2}; empty containers are kept as leaves."""
    items = data.items() if isinstance(data, dict) else enumerate(data)
    flat = {}
    for key, value in items:
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict | list) and value:
            flat.update(flatten(value, path))
        else:
            flat[path] = value
    return flat


def unflatten(flat):
    """Inverse of flatten (numeric parts build lists)."""
    data = {}
    for path in sorted(flat, key=lambda p: [(0, x) if isinstance(x, int) else (1, x) for x in split_path(p)]):
        set_path(data, path, flat[path])
    return data


def delete_path(data, path):
    """Remove the value at `path`; KeyError when it does not exist."""
    parts = split_path(path)
    parent = get_path(data, ".".join(str(p) for p in parts[:-1])) if len(parts) > 1 else data
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and isinstance(last, int) and last < len(parent):
        del parent[last]
    else:
        raise KeyError(path)
