"""The pinned packages of swe_real and their local copies: download at set-up, verify, unpack, snapshot.

Each entry of packages.json pins one sdist (name, version, URL, sha256, licence) and says which of its paths make
the repository the agent sees: `source` (what bugs are planted in and the agent may edit), `tests` (the package's
own suite), `keep` (licence and readme). Nothing here runs at training time except reading the cache:

    python -m agentrl.envs.swe.real.packages            # download (once), verify and unpack every package
    python -m agentrl.envs.swe.real.packages --offline  # only check that the cache is complete

The cache is `$AGENTRL_CACHE/swe_real/` (agentrl.sandboxes.image.cache_dir): `sdists/<file>.tar.gz` exactly as
pinned, and `snapshots/<owner>__<repo>/` (SWE-bench's folder naming), the kept files plus a `pytest.ini` that puts
the package on the path. Licence files stay in every snapshot.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from agentrl.errors import AgentRLError

PACKAGES_FILE = Path(__file__).parent / "packages.json"
DOWNLOAD_TIMEOUT_S = 120
SNAPSHOT_VERSION = "1"  # bump when what a snapshot holds changes (the folder is rebuilt)
_STAMP = ".agentrl-snapshot"


class PackageError(AgentRLError):
    """A pinned package is missing from the cache, cannot be downloaded, or does not match its sha256."""


@dataclass(frozen=True)
class Package:
    """One pinned sdist and the parts of it that make a task repository."""

    name: str
    version: str
    repo: str
    """GitHub-style `owner/name`, which names the snapshot folder (`owner__name`) and every task id."""
    license: str
    split: str
    """train | dev | test: every task of a package lands in this split (a package is never in two)."""
    url: str
    sha256: str
    pythonpath: str
    """The folder the package imports from (`.` or `src`), written into the snapshot's pytest.ini."""
    source: tuple[str, ...]
    """Paths (files or folders) of the package's code: where bugs are planted and what the agent may edit."""
    tests: tuple[str, ...]
    keep: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    """Test files never used, with the reason in packages.json's `why` (e.g. doctests that set builtins._, which
    the grading harness reads as tampering)."""
    why: str = ""
    rounds: int = 1
    """Rounds of generation (generate.py): each runs up to MAX_TRIES more candidates for up to PER_PACKAGE more
    single bugs and PAIRS two-bug tasks, numbered after the earlier rounds' tasks, which stay as they were."""

    @property
    def slug(self) -> str:
        """`owner__name`: the snapshot folder and the prefix of task ids."""
        return self.repo.replace("/", "__")

    @property
    def sdist_name(self) -> str:
        """The file name of the pinned sdist."""
        return self.url.rsplit("/", 1)[1]

    def src_globs(self) -> list[str]:
        """What the agent may change: the package's Python files, never its tests."""
        globs = [p if p.endswith(".py") else f"{p}/*.py" for p in self.source]
        return globs + [f"!{t}" if t.endswith(".py") else f"!{t}/*" for t in self.tests]


def load_packages(path: str | os.PathLike = PACKAGES_FILE) -> list[Package]:
    """The pinned packages, in file order."""
    records = json.loads(Path(path).read_text())
    return [Package(**{**r, "source": tuple(r["source"]), "tests": tuple(r["tests"]), "keep": tuple(r["keep"]),
                       "exclude": tuple(r.get("exclude", ()))}) for r in records]


def package_named(name: str) -> Package:
    """The pinned package `name` (PackageError naming the known ones otherwise)."""
    known = {p.name: p for p in load_packages()}
    if name not in known:
        raise PackageError(f"no pinned package {name!r}: known are {', '.join(known)}")
    return known[name]


def cache_root() -> Path:
    """`<agentrl cache>/swe_real` (the sandbox image cache's parent folder, $AGENTRL_CACHE when set)."""
    from agentrl.sandboxes.image import cache_dir

    return cache_dir() / "swe_real"


def snapshots_dir() -> Path:
    """The folder holding one `owner__name/` snapshot per package."""
    return cache_root() / "snapshots"


def sdist_path(pkg: Package) -> Path:
    """Where the pinned sdist is cached."""
    return cache_root() / "sdists" / pkg.sdist_name


def download(pkg: Package, log=print) -> Path:
    """The cached sdist of `pkg`, downloaded first when absent; its sha256 is checked either way."""
    path = sdist_path(pkg)
    if not path.is_file():
        log(f"downloading {pkg.name} {pkg.version} ({pkg.url})")
        try:
            with urllib.request.urlopen(pkg.url, timeout=DOWNLOAD_TIMEOUT_S) as r:
                data = r.read()
        except OSError as e:
            raise PackageError(f"could not download {pkg.name} {pkg.version} from {pkg.url}: {e}") from e
        if hashlib.sha256(data).hexdigest() != pkg.sha256:
            raise PackageError(f"{pkg.url}: sha256 {hashlib.sha256(data).hexdigest()} is not the pinned "
                               f"{pkg.sha256}; the file was not kept")
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as f:
            f.write(data)
        os.replace(f.name, path)
    elif hashlib.sha256(path.read_bytes()).hexdigest() != pkg.sha256:
        raise PackageError(f"{path} does not match its pinned sha256: delete it and run "
                           "'python -m agentrl.envs.swe.real.packages' again")
    return path


def _wanted(pkg: Package, rel: str) -> bool:
    """True for a path of the sdist (without its top folder) that the snapshot keeps."""
    parts = rel.split("/")
    if "__pycache__" in parts or rel.endswith((".pyc", ".pyo")):
        return False
    for root in (*pkg.source, *pkg.tests, *pkg.keep):
        if rel == root or rel.startswith(root.rstrip("/") + "/"):
            return True
    return False


def snapshot_files(pkg: Package, sdist: Path | None = None) -> dict[str, str]:
    """{path: text} of the repository made from the sdist: the kept UTF-8 files plus our pytest.ini."""
    files: dict[str, str] = {}
    with tarfile.open(sdist or sdist_path(pkg)) as tar:
        for member in tar.getmembers():
            if not member.isfile() or "/" not in member.name:
                continue
            rel = member.name.split("/", 1)[1]
            if not _wanted(pkg, rel):
                continue
            data = tar.extractfile(member).read()
            try:
                files[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
    files["pytest.ini"] = f"[pytest]\npythonpath = {pkg.pythonpath}\n"
    return dict(sorted(files.items()))


def _stamp(pkg: Package) -> str:
    """What a snapshot folder was made from: the format, the sdist and the parts packages.json keeps (a changed
    `tests` or `keep` rebuilds the folder)."""
    parts = json.dumps([pkg.pythonpath, pkg.source, pkg.tests, pkg.keep])
    return f"{SNAPSHOT_VERSION} {pkg.sha256} {hashlib.sha256(parts.encode()).hexdigest()[:16]}\n"


def snapshot(pkg: Package, log=print) -> Path:
    """The unpacked snapshot folder of `pkg` (made from the cached sdist when absent or out of date)."""
    folder = snapshots_dir() / pkg.slug
    stamp = _stamp(pkg)
    if (folder / _STAMP).is_file() and (folder / _STAMP).read_text() == stamp:
        return folder
    files = snapshot_files(pkg, download(pkg, log))
    tmp = Path(tempfile.mkdtemp(dir=folder.parent if folder.parent.is_dir() else _mkdir(folder.parent)))
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text, encoding="utf-8")
    (tmp / _STAMP).write_text(stamp)
    os.chmod(tmp, 0o755)
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    os.replace(tmp, folder)
    log(f"{pkg.name} {pkg.version}: {len(files)} files in {folder}")
    return folder


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def missing(packages: list[Package] | None = None) -> list[str]:
    """Names of the packages whose snapshot is not in the cache (what set-up has yet to fetch)."""
    out = []
    for pkg in packages or load_packages():
        stamp = snapshots_dir() / pkg.slug / _STAMP
        if not stamp.is_file() or stamp.read_text() != _stamp(pkg):
            out.append(pkg.name)
    return out


def ensure_all(log=print) -> list[Path]:
    """Download, verify and unpack every pinned package (idempotent: a complete cache is only checked)."""
    return [snapshot(pkg, log) for pkg in load_packages()]


def licence_report() -> str:
    """One line per package: name, version, licence, repository (for docs and the data NOTICE)."""
    out = io.StringIO()
    for p in load_packages():
        out.write(f"{p.name} {p.version}  {p.license}  https://github.com/{p.repo}\n")
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    """CLI: fetch the pinned packages into the cache (or, with --offline, check that it is complete)."""
    ap = argparse.ArgumentParser(prog="python -m agentrl.envs.swe.real.packages", description=__doc__.split("\n")[0])
    ap.add_argument("--offline", action="store_true", help="download nothing; exit 1 naming what is missing")
    args = ap.parse_args(argv)
    if args.offline:
        gone = missing()
        print("swe_real cache complete" if not gone else f"swe_real cache lacks: {', '.join(gone)}")
        return 1 if gone else 0
    try:
        ensure_all(log=lambda m: print(f"[swe_real] {m}", flush=True))
    except PackageError as e:
        print(f"[swe_real] {e}", file=sys.stderr)
        return 2
    print(f"[swe_real] {len(load_packages())} packages ready in {snapshots_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
