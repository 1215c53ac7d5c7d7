"""A small INI reader: [sections], key = value pairs, comments, typed getters."""


def parse(text):
    """{section: {key: value}} for an INI text; keys before any section go to "DEFAULT"."""
    data = {"DEFAULT": {}}
    section = "DEFAULT"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ValueError(f"line {number}: bad section header {line!r}")
            section = line[1:-1].strip()
            data.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {number}: expected key = value")
        key = key.strip().lower()
        if not key:
            raise ValueError(f"line {number}: empty key")
        data[section][key] = strip_comment(value.strip())
    return data


def strip_comment(value):
    """The value without a trailing ` #` or ` ;` comment (quoted values keep everything)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    for marker in (" #", " ;"):
        index = value.find(marker)
        if index >= 0:
            value = value[:index]
    return value.rstrip()


def get(data, section, key, default=None):
    """A value from `section`, falling back to DEFAULT, then to `default`."""
    key = key.lower()
    if key in data.get(section, {}):
        return data[section][key]
    if key in data.get("DEFAULT", {}):
        return data["DEFAULT"][key]
    return default


def get_int(data, section, key, default=0):
    """A value as an int; ValueError names the key when it is not a number."""
    value = get(data, section, key)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{section}.{key} is not an integer: {value!r}") from None


def get_bool(data, section, key, default=False):
    """A value as a bool (yes/no, true/false, on/off, 1/0)."""
    value = get(data, section, key)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("1", "yes", "true", "on"):
        return True
    if lowered in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"{section}.{key} is not a boolean: {value!r}")


def dump(data):
    """INI text for `data` (DEFAULT first, when not empty)."""
    chunks = []
    for section, values in data.items():
        if section == "DEFAULT" and not values:
            continue
        lines = [f"[{section}]"] + [f"{key} = {value}" for key, value in values.items()]
        chunks.append("\n".join(lines))
    return "\n\n".join(chunks) + "\n" if chunks else ""
