"""The grading wire: values as tagged JSON, decoded in bounded time and memory, whatever the peer sends; the one
table of the builtin operations a request may name; and the judges' proxy (`Proxy`) that asks them of the worker.

Both judges read this from the one worker (worker.py): swe_lite's (judge.py, on the host) and the suite judge
(suite_judge.py, in a sandbox of its own); suite.py pastes this file into those two sandbox scripts, so it imports
only the standard library. A value is `null`, `true`/`false`, a JSON string, or one of
    {"int": digits}  {"float": repr}  {"bytes": hex}  {"list" | "tuple" | "set" | "frozenset": [values]}
    {"dict": [[key, value], ...]}  and handles ({"wref"} the worker's, {"jref"} the judge's: the caller decodes
    them, `handle`)
    and the caller's own extensions ({"std"}, {"stdname"}: `special`; a stdname resolves only through STD_TABLE).
The peer is hostile, so decoding is bounded: the line length, the nesting depth, the number of values, the digits
of an int, and the time (a `check` callback, called every few thousand values, raises when a deadline passed).
Sets and dicts are built only from exact hashable values (checked with `type(x) is ...`), and never from many
members that share one hash: ints, floats and tuples hash predictably (an int's hash is its value mod 2**61 - 1),
and a set of n members with one hash takes O(n²) comparisons while holding the interpreter lock, so more than
MAX_COLLISIONS members with one hash refuse the value (a set of distinct values has almost never more than one).
"""

import itertools
import json
import re

MAX_LINE = 8 << 20  # bytes of one line
MAX_DEPTH = 24  # nesting of one value
MAX_NODES = 200_000  # values in one answer
MAX_INT_DIGITS = 4000
MAX_COLLISIONS = 8  # set members or dict keys of one value that share one hash
CHECK_EVERY = 4096  # values decoded between two calls of the time check
MAX_ITEMS = 10_000  # items of one iteration that come at once
MAX_AHEAD = 1024  # items of one iterator read ahead at once (AHEAD)
HANDLE_KEYS = ("jref", "wref")
SPECIAL_KEYS = ("std", "stdname", "exc")
# The standard library's classes that travel by name (`{"stdname": "module:name"}`), so the package's identity checks
# (`type(x) is int`, `cls is datetime.date`) hold on both sides. The only names there are: each is looked up as the
# module-level attribute of exactly that name (no dotted walk, no `__module__`/`__qualname__` read off an object)
# and an object crosses by name only when it IS that table entry (identity). Every entry is a class whose call makes
# a value, or an exception or abstract class that is only tested against; no function, metaclass, descriptor or
# attribute-walking helper (operator.attrgetter, string.Formatter) is here. Anything else is a handle.
STD_CLASSES = {
    "builtins": ("bool", "int", "float", "complex", "str", "bytes", "bytearray", "list", "tuple", "dict", "set",
                 "frozenset", "slice", "range", "object"),
    "datetime": ("date", "datetime", "time", "timedelta", "timezone", "tzinfo"),
    "decimal": ("Decimal", "DecimalException", "InvalidOperation", "DivisionByZero", "Inexact", "Rounded",
                "Overflow", "Underflow", "Subnormal", "Clamped", "FloatOperation"),
    "fractions": ("Fraction",),
    "numbers": ("Number", "Complex", "Real", "Rational", "Integral"),
    "pathlib": ("Path", "PosixPath", "PurePath", "PurePosixPath"),
    "collections": ("OrderedDict", "defaultdict", "Counter", "deque", "ChainMap", "UserDict", "UserList",
                    "UserString"),
    "collections.abc": ("Hashable", "Iterable", "Iterator", "Reversible", "Generator", "Sized", "Container",
                        "Callable", "Collection", "Set", "MutableSet", "Mapping", "MutableMapping", "Sequence",
                        "MutableSequence", "MappingView", "KeysView", "ItemsView", "ValuesView"),
    "enum": ("Enum", "IntEnum", "Flag", "IntFlag", "StrEnum"),
    "re": ("Pattern", "Match", "error"),
    "uuid": ("UUID",),
    "io": ("StringIO", "BytesIO"),
    "json": ("JSONDecodeError",),
    "abc": ("ABC",),
}
# Standard library values that travel by constructor arguments (`{"std": name, "args": std_args(x)}`).
STD_VALUES = ("builtins.slice", "builtins.range", "datetime.date", "datetime.datetime", "datetime.time",
              "datetime.timedelta", "decimal.Decimal", "fractions.Fraction", "pathlib.PosixPath",
              "pathlib.PurePosixPath", "uuid.UUID")
SCALARS = (type(None), bool, str)
CONTAINERS = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
_INT = re.compile(rf"-?[0-9]{{1,{MAX_INT_DIGITS}}}")
_HEX = re.compile(r"(?:[0-9a-f]{2})*")


class WireRefused(ValueError):
    """The peer sent something the wire does not allow (malformed, past a cap, a hash flood)."""


def loads(line: bytes):
    """The JSON of one line (WireRefused when it is not JSON within the nesting the parser allows)."""
    if len(line) > MAX_LINE:
        raise WireRefused(f"a line of more than {MAX_LINE} bytes")
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        raise WireRefused("a line that is not JSON") from None


def exact_hashable(x) -> bool:
    """True for an exact int, float, str, bytes, bool or None, or an exact tuple / frozenset of them."""
    t = type(x)
    return t in (int, float, str, bytes, bool, type(None)) or (t in (tuple, frozenset) and all(map(exact_hashable, x)))


def check_collisions(keys: list) -> None:
    """Refuse `keys` (set members or dict keys) when more than MAX_COLLISIONS of them share one hash.

    Sorting the hashes is O(n log n) and never compares the keys themselves, so a flood costs what an honest
    value of the same size costs; building the set afterwards probes at most MAX_COLLISIONS keys per member."""
    if not all(map(exact_hashable, keys)):
        raise WireRefused("a set member or dict key that is not an exact hashable value")
    if len(keys) <= MAX_COLLISIONS:
        return
    hashes = sorted(map(hash, keys))
    run = 1
    for a, b in zip(hashes, hashes[1:], strict=False):
        run = run + 1 if a == b else 1
        if run > MAX_COLLISIONS:
            raise WireRefused(f"more than {MAX_COLLISIONS} set members or dict keys share one hash (a hash flood)")


def build_set(items: list, kind: type):
    """A set or frozenset of `items`, hash-flood safe."""
    check_collisions(items)
    return kind(items)


def build_dict(pairs: list) -> dict:
    """A dict of (key, value) pairs, hash-flood safe; repeated keys are refused."""
    check_collisions([k for k, _ in pairs])
    out = dict(pairs)
    if len(out) != len(pairs):
        raise WireRefused("a dict with repeated keys")
    return out


class Decoder:
    """Decodes one message's values with one node budget; `handle(dict)` decodes the caller's handles, `special`
    (optional) its extensions, and `check()` (optional) is called every CHECK_EVERY values so a slow decode still
    meets the caller's deadline."""

    def __init__(self, handle, check=None, max_nodes: int = MAX_NODES, special=None) -> None:
        self.handle, self.check, self.max_nodes, self.special, self.nodes = handle, check, max_nodes, special, 0

    def value(self, v, depth: int = 0):
        """The value `v` (parsed JSON) stands for; WireRefused for anything outside the schema or the caps."""
        self.nodes += 1
        if self.nodes > self.max_nodes or depth > MAX_DEPTH:
            raise WireRefused("a value past the size or depth cap")
        if self.check is not None and self.nodes % CHECK_EVERY == 0:
            self.check()
        t = type(v)
        if t in SCALARS:
            return v
        if t is not dict:
            raise WireRefused(f"a value of JSON type {t.__name__} outside the schema")
        if any(k in v for k in HANDLE_KEYS):
            return self.handle(v)
        if self.special is not None and any(k in v for k in SPECIAL_KEYS):
            return self.special(v)
        if len(v) != 1:
            raise WireRefused("a tagged value with extra keys")
        (tag, body), = v.items()
        if tag == "int":
            if type(body) is not str or not _INT.fullmatch(body):
                raise WireRefused("a malformed int")
            return int(body)
        if tag == "float":
            if type(body) is not str or len(body) > 40:
                raise WireRefused("a malformed float")
            try:
                return float(body)
            except ValueError:
                raise WireRefused("a malformed float") from None
        if tag == "bytes":
            if type(body) is not str or not _HEX.fullmatch(body):
                raise WireRefused("malformed bytes")
            return bytes.fromhex(body)
        if tag in CONTAINERS:
            if type(body) is not list:
                raise WireRefused(f"a malformed {tag}")
            items = [self.value(w, depth + 1) for w in body]
            if tag in ("set", "frozenset"):
                return build_set(items, CONTAINERS[tag])
            return CONTAINERS[tag](items)
        if tag == "dict":
            if type(body) is not list or any(type(p) is not list or len(p) != 2 for p in body):
                raise WireRefused("a malformed dict")
            return build_dict([(self.value(k, depth + 1), self.value(w, depth + 1)) for k, w in body])
        raise WireRefused(f"an unknown tag {str(tag)[:40]!r}")


def _std_table() -> dict:
    """{"module:name": the class} for every STD_CLASSES entry this Python has, plus the builtin exception and
    warning classes (what `raise` and `warnings` name); built once, by exact module-level lookup."""
    import builtins
    import importlib

    table = {}
    for module, names in STD_CLASSES.items():
        mod = importlib.import_module(module)
        for name in names:
            obj = mod.__dict__.get(name)
            if isinstance(obj, type) and obj.__name__ == name:
                table[f"{module}:{name}"] = obj
    for name, obj in vars(builtins).items():
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__name__ == name:  # not IOError
            table[f"builtins:{name}"] = obj
    return table


STD_TABLE = _std_table()
_STD_BY_ID = {id(obj): name for name, obj in STD_TABLE.items()}


def std_name(x) -> str | None:
    """The table name of `x` when `x` is itself a STD_TABLE entry (by identity), else None."""
    name = _STD_BY_ID.get(id(x))
    return name if name is not None and STD_TABLE[name] is x else None


def std_object(name) -> type:
    """The STD_TABLE entry called `name`; WireRefused for any other name (nothing else is ever looked up)."""
    obj = STD_TABLE.get(name) if type(name) is str else None
    if obj is None:
        raise WireRefused(f"a stdlib name outside the table: {str(name)[:60]!r}")
    return obj


def builtin_exception(name, base: type = BaseException) -> type | None:
    """The builtin exception (or warning) class called `name` that derives from `base`, else None."""
    obj = STD_TABLE.get(f"builtins:{name}") if type(name) is str else None
    return obj if isinstance(obj, type) and issubclass(obj, base) else None


def std_args(x):
    """The constructor's arguments of a stdlib value; a date-time's tzinfo is its fixed offset in seconds when it is
    a `datetime.timezone`, else the tzinfo object itself (a handle: the package's own tzinfo classes)."""
    import datetime

    if type(x) in (slice, range):
        if not all(type(v) in (int, type(None)) for v in (x.start, x.stop, x.step)):
            raise TypeError("a slice of objects")
        return (x.start, x.stop, x.step)
    if isinstance(x, (datetime.datetime, datetime.time)):
        tz = x.tzinfo
        if type(tz) is datetime.timezone:
            tz = tz.utcoffset(None).total_seconds()
        parts = (x.year, x.month, x.day) if isinstance(x, datetime.datetime) else ()
        return (*parts, x.hour, x.minute, x.second, x.microsecond, tz)
    if isinstance(x, datetime.date):
        return (x.year, x.month, x.day)
    if isinstance(x, datetime.timedelta):
        return (x.days, x.seconds, x.microseconds)
    return (str(x),)


def std_value(name, args: tuple, tz_ok=lambda tz: True):
    """The stdlib value `{"std": name, "args": args}` stands for, made only from plain arguments (`tz_ok` says which
    tzinfo objects a date-time may hold besides a fixed offset); TypeError or ValueError for anything else."""
    import datetime
    import decimal
    import fractions
    import pathlib
    import uuid

    if name in ("builtins.slice", "builtins.range"):
        if not all(type(a) in (int, type(None)) for a in args) or len(args) != 3:
            raise TypeError(name)
        return slice(*args) if name == "builtins.slice" else range(*[a for a in args if a is not None])
    if name in ("datetime.datetime", "datetime.time"):
        *parts, tz = args
        if type(tz) in (int, float):
            tz = datetime.timezone(datetime.timedelta(seconds=tz))
        elif tz is not None and not tz_ok(tz):
            raise TypeError("tzinfo")
        if not all(type(a) is int for a in parts):
            raise TypeError(name)
        return (datetime.datetime if name == "datetime.datetime" else datetime.time)(*parts, tzinfo=tz)
    kinds = {"datetime.date": datetime.date, "datetime.timedelta": datetime.timedelta,
             "decimal.Decimal": decimal.Decimal, "fractions.Fraction": fractions.Fraction,
             "pathlib.PosixPath": pathlib.PosixPath, "pathlib.PurePosixPath": pathlib.PurePosixPath,
             "uuid.UUID": uuid.UUID}
    if name not in kinds:
        raise TypeError(f"not a stdlib value: {str(name)[:60]!r}")
    if name in ("datetime.date", "datetime.timedelta"):
        if not all(type(a) is int for a in args):
            raise TypeError(name)
    elif len(args) != 1 or type(args[0]) is not str:
        raise TypeError(name)
    elif name in ("decimal.Decimal", "fractions.Fraction") and len(args[0]) > 200:
        raise ValueError(name)
    return kinds[name](*args)


# The builtin operations a request may name (`{"op": "apply", "fn": name, ...}`), the same table on both sides: the
# worker does them on its objects, the suite judge on the objects it handed out. Each binary operation comes with
# its reflected twin ("radd": `other + obj`). The worker adds what it alone answers.
BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift", "matmul")


def operations() -> dict:
    """{name: function} of the operations above."""
    import operator

    table = {"str": str, "repr": repr, "len": len, "next": next, "bool": bool, "hash": hash, "int": int,
             "float": float, "index": operator.index, "format": format, "getitem": operator.getitem,
             "setitem": operator.setitem, "delitem": operator.delitem, "contains": operator.contains,
             "neg": operator.neg, "pos": operator.pos, "abs": abs, "invert": operator.invert, "eq": operator.eq,
             "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
             "enter": lambda o: o.__enter__(), "exit": lambda o, *a: o.__exit__(*a), "iter": iterate}
    for name in BINARY:
        op = getattr(operator, name + "_" if name in ("and", "or") else name)
        table[name] = op
        table["r" + name] = _reflected(op)
    return table


def iterate(obj):
    """Iteration, as either side answers it: a builtin container's items at once (a tuple: by value), else its
    iterator, asked item by item (or read ahead: AHEAD)."""
    if type(obj) in (list, tuple, dict, set, frozenset, str, bytes, range):
        items = tuple(itertools.islice(obj, MAX_ITEMS + 1))
        if len(items) <= MAX_ITEMS:
            return items
    return iter(obj)


# Builtin iterators that hold their items' source (a list, tuple, str, bytes or range; COPIED ones copy a dict's or
# set's remaining items to read them): the suite judge reads their next items ahead (worker._ahead,
# suite_judge.Remote.__next__), as reading them runs none of the package's code.
COPIED = frozenset(type(iter(x)) for x in ({}, {}.values(), {}.items(), set()))
AHEAD = frozenset(type(iter(x)) for x in ([], (), "", "\u20ac", b"", range(0), range(1 << 64))) | COPIED


def _reflected(op):
    return lambda a, b: op(b, a)


class Proxy:
    """A judge's proxy of a worker object: each builtin operation on it is the operation of that name above, asked
    of the worker through the judge's `_apply(fn, *args)`; an answer that must be an exact str, int, float or bool
    is checked, else the judge's `_inexact` exception. A judge's Remote adds its transport, attribute access and its
    policy for `==`, `!=`, truth, hash and ordering (swe_lite's refuses them; the suite judge asks)."""

    __slots__ = ()
    _inexact = TypeError
    _order_values = True  # whether `<` and the like may compare a worker object with a plain value

    def _order(self, fn: str, other) -> bool:
        if not self._order_values and type(other) is not type(self):
            raise self._inexact("ordering a worker object against a value: tests compare exact values")
        return self._exact(fn, bool, other)

    def __lt__(self, other):
        return self._order("lt", other)

    def __le__(self, other):
        return self._order("le", other)

    def __gt__(self, other):
        return self._order("gt", other)

    def __ge__(self, other):
        return self._order("ge", other)

    def _exact(self, fn: str, kind: type, *args):
        got = self._apply(fn, *args)
        if type(got) is not kind:
            raise self._inexact(f"{fn} of a worker object gave a {type(got).__name__}, not a {kind.__name__}")
        return got

    def __str__(self) -> str:
        return self._exact("str", str)

    def __repr__(self) -> str:
        return self._exact("repr", str)

    def __len__(self) -> int:
        return self._exact("len", int)

    def __int__(self) -> int:
        return self._exact("int", int)

    def __float__(self) -> float:
        return self._exact("float", float)

    def __contains__(self, item) -> bool:
        return self._exact("contains", bool, item)

    def __iter__(self):
        got = self._apply("iter")  # a container's items at once, else the worker's iterator, asked item by item
        if type(got) is tuple and len(got) <= MAX_ITEMS:
            return iter(got)
        if type(got) is type(self):
            return got
        raise self._inexact("iteration of a worker object gave neither its items nor an iterator")

    def __next__(self):
        return self._apply("next")

    def __getitem__(self, key):
        return self._apply("getitem", key)

    def __setitem__(self, key, value) -> None:
        self._apply("setitem", key, value)

    def __delitem__(self, key) -> None:
        self._apply("delitem", key)

    def __neg__(self):
        return self._apply("neg")

    def __pos__(self):
        return self._apply("pos")

    def __abs__(self):
        return self._apply("abs")

    def __invert__(self):
        return self._apply("invert")


def _binary(fn: str):
    return lambda self, other: self._apply(fn, other)


for _fn in BINARY:
    setattr(Proxy, f"__{_fn}__", _binary(_fn))
    setattr(Proxy, f"__r{_fn}__", _binary("r" + _fn))


def write_back(out, lent: dict, decode) -> None:
    """Give the caller's lists, dicts and sets that went to a call as copies (`lent`: position or keyword -> the
    object) the state the call left them in (`out`, the peer's [[position or keyword, value], ...], each value
    decoded by `decode`); WireRefused for a malformed list or a value of another type."""
    if type(out) is not list:
        raise WireRefused("a malformed changed-arguments list")
    for item in out:
        if type(item) is not list or len(item) != 2 or type(item[0]) not in (int, str):
            raise WireRefused("a malformed changed argument")
        new = decode(item[1])
        target = lent.get(item[0])
        if target is None:  # not one of the caller's containers (a range sent as a list): nothing to update
            continue
        if type(new) is not type(target) or type(target) not in (list, dict, set):
            raise WireRefused("a changed argument of another type")
        if type(target) is list:
            target[:] = new
        else:
            target.clear()
            target.update(new)


def lent(args, kwargs: dict) -> dict:
    """The lists, dicts and sets among a call's arguments, by position or keyword (what `write_back` refills)."""
    return {k: v for k, v in [*enumerate(args), *kwargs.items()] if type(v) in (list, dict, set)}


def freeze(x):
    """A hashable form of an exact value (lists and tuples as tuples, dicts and sets as frozensets), for a set
    member or dict key of a canonical form."""
    if type(x) in (list, tuple):
        return tuple(freeze(v) for v in x)
    if type(x) is dict:
        return frozenset((k, freeze(v)) for k, v in x.items())
    if type(x) is set:
        return frozenset(x)
    return x


def encode_exact(x, depth: int = 0, other=None):
    """An exact builtin value as the wire writes it; anything else goes to `other(x)` (None: TypeError)."""
    t = type(x)
    if t in SCALARS:
        return x
    if t is int:
        return {"int": str(x)}
    if t is float:
        return {"float": repr(x)}
    if t is bytes:
        return {"bytes": x.hex()}
    if depth <= MAX_DEPTH and t.__name__ in CONTAINERS and CONTAINERS[t.__name__] is t:
        return {t.__name__: [encode_exact(v, depth + 1, other) for v in x]}
    if depth <= MAX_DEPTH and t is dict:
        return {"dict": [[encode_exact(k, depth + 1, other), encode_exact(v, depth + 1, other)] for k, v in x.items()]}
    if other is None:
        raise TypeError(f"cannot encode a {t.__name__}")
    return other(x)
