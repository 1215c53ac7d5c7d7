"""URL query strings: percent-encoding, parsing into multi-dicts, building, and URL splitting."""

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~"


def quote(text):
    """Percent-encode everything but unreserved characters (UTF-8 bytes; space becomes %20)."""
    out = []
    for char in text:
        if char in SAFE:
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def unquote(text, plus_is_space=True):
    """Decode %XX escapes (and '+' as a space); ValueError for a truncated or non-hex escape."""
    data = bytearray()
    i = 0
    while i < len(text):
        char = text[i]
        if char == "%":
            pair = text[i + 1:i + 3]
            if len(pair) < 2 or any(c not in "0123456789abcdefABCDEF" for c in pair):
                raise ValueError(f"bad escape at {i} in {text!r}")
            data.append(int(pair, 16))
            i += 3
            continue
        if char == "+" and plus_is_space:
            data.extend(b" ")
        else:
            data.extend(char.encode("utf-8"))
        i += 1
    return data.decode("utf-8")


def parse_query(query):
    """"a=1&b=2&a=3" -> {"a": ["1", "3"], "b": ["2"]}; a key without '=' gets "", empty pairs are skipped."""
    if query.startswith("?"):
        query = query[1:]
    result = {}
    for pair in query.split("&"):
        if not pair:
            continue
        key, _, value = pair.partition("=")
        result.setdefault(unquote(key), []).append(unquote(value))
    return result


def build_query(params):
    """Inverse of parse_query for a dict of str or list values, keys in the dict's order."""
    pairs = []
    for key, value in params.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            pairs.append(f"{quote(key)}={quote(str(item))}")
    return "&".join(pairs)


def split_url(url):
    """(scheme, host, port or None, path, query) of an absolute http(s) URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    rest, _, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    host, colon, port = authority.partition(":")
    if not host:
        raise ValueError(f"missing host in {url!r}")
    port_number = None
    if colon:
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bad port {port!r}")
        port_number = int(port)
    return scheme, host.lower(), port_number, "/" + path if slash else "/", query


def get_param(url, name, default=None):
    """The first value of query parameter `name` in `url`."""
    values = parse_query(split_url(url)[4]).get(name)
    return values[0] if values else default
