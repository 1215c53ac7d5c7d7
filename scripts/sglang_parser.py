"""SGLang's own server-argument parser on a machine without a GPU, to check the argv `agentrl serve --backend sglang`
prints against the real thing (tests/engine/test_sglang_launch.py).

  python scripts/sglang_parser.py fetch            # download the wheels once into the cache (offline afterwards)
  python scripts/sglang_parser.py check ARGV...    # parse ARGV with SGLang 0.5.23's parser; prints JSON, exit 0/2

`fetch` puts sglang==0.5.23 and msgspec (which its argument classes are built on) in $AGENTRL_CACHE/sglang-0.5.23
(default ~/.cache/agentrl) with `pip download --no-deps` and unpacks them there; nothing is installed into the
environment. `check` imports sglang.srt.server_args from there, builds the parser exactly as `sglang serve` does
(argparse + ServerArgs.add_cli_args) and parses ARGV. Importing that module pulls in runtime-only packages
(triton, zmq, orjson, starlette, ...) that a CPU machine lacks; only for imports made from sglang's own files,
a module that cannot be found is replaced by an inert stand-in, so the argument definitions load while every
installed package keeps its real behaviour. A flag SGLang does not define exactly (argparse alone would accept a
unique prefix) or a value it refuses makes `check` exit 2.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import subprocess
import sys
import types
import zipfile
from pathlib import Path

VERSION = "0.5.23"
WHEELS = (f"sglang=={VERSION}", "msgspec")


def target() -> Path:
    """Where the unpacked wheels live."""
    root = Path(os.environ.get("AGENTRL_CACHE") or Path.home() / ".cache" / "agentrl")
    return root / f"sglang-{VERSION}"


def fetch() -> Path:
    """Download and unpack the wheels unless they are there already; returns the directory to import from."""
    out = target()
    done = out / "complete.json"
    if done.is_file():
        return out
    wheels = out / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for spec in WHEELS:
        name = spec.split("==")[0]
        if not any(w.name.startswith(name + "-") for w in wheels.glob("*.whl")):
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                            "--only-binary=:all:", "-d", str(wheels), spec], check=True)
    site = out / "site"
    for wheel in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(site)
    done.write_text(json.dumps({"wheels": sorted(w.name for w in wheels.glob("*.whl"))}))
    return out


class _Inert(types.ModuleType):
    """A stand-in for a module sglang imports but never uses while defining its arguments: every attribute is
    another stand-in, calling one returns one (or passes a decorated function through), and it is falsy."""

    def __init__(self, name: str = "inert"):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, key):
        if key.startswith("__") and key.endswith("__"):
            raise AttributeError(key)
        return _Inert(f"{self.__name__}.{key}")

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else _Inert()

    def __mro_entries__(self, bases):
        return (object,)

    def __iter__(self):
        return iter(())

    def __getitem__(self, key):
        return _Inert()

    def __bool__(self):
        return False

    def __lt__(self, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __or__(self, other):
        return self

    __ror__ = __or__


class _MissingFromSGLang(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds what no other finder finds, only for imports made from sglang's files."""

    def find_spec(self, name, path, target=None):
        frame = sys._getframe(1)
        while frame is not None and ("importlib" in frame.f_code.co_filename
                                     or frame.f_code.co_filename.startswith("<frozen")):
            frame = frame.f_back
        if frame is None or "/sglang/" not in frame.f_code.co_filename or name.split(".")[0] == "sglang":
            return None
        for finder in sys.meta_path:
            if finder is not self:
                try:
                    if finder.find_spec(name, path, target) is not None:
                        return None
                except (ImportError, ValueError, AttributeError):
                    continue
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        return _Inert(spec.name)

    def exec_module(self, module):
        pass


def parser():
    """SGLang's server-argument parser, as `sglang serve` builds it (sglang.srt.server_args.prepare_server_args)."""
    import argparse

    sys.path.insert(0, str(target() / "site"))
    sys.meta_path.append(_MissingFromSGLang())
    from sglang.srt.server_args import ServerArgs

    p = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(p)
    return p


def main(argv: list[str]) -> int:
    if argv[:1] == ["fetch"]:
        print(fetch())
        return 0
    if argv[:1] == ["check"]:
        if not (target() / "complete.json").is_file():
            print(f"SGLang {VERSION} is not fetched: run python {sys.argv[0]} fetch", file=sys.stderr)
            return 3
        p = parser()
        inexact = [a for a in argv[1:] if a.startswith("--") and a.split("=")[0] not in p._option_string_actions]
        if inexact:  # argparse would take a unique prefix: a renamed flag would slip through as an abbreviation
            print(f"sglang serve: error: not SGLang {VERSION} flags (exactly): {' '.join(inexact)}", file=sys.stderr)
            return 2
        ns = p.parse_args(argv[1:])  # a bad value or a missing argument: argparse prints why and exits 2
        print(json.dumps({k: v for k, v in vars(ns).items() if isinstance(v, (str, int, float, bool, type(None)))}))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
