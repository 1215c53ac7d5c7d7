"""The seccomp filter of the sandboxes (sandboxes/seccomp.py): the BPF program itself, its syscall numbers against
the kernel headers and the running kernel, and the filter inside real docker and bwrap sandboxes (every denied
syscall answers EPERM, siblings cannot ptrace or read each other, ordinary work still runs)."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from agentrl.sandboxes import seccomp
from agentrl.sandboxes.base import SandboxConfigError
from sandbox_helpers import BACKEND_PARAMS, sandbox_of

from agentrl.errors import SandboxError

ARCH = seccomp.machine()
TABLE = seccomp.SYSCALLS.get(ARCH, {})
GETPID = {"x86_64": 39, "aarch64": 172}
needs_table = pytest.mark.skipif(ARCH not in seccomp.SYSCALLS, reason=f"no syscall table for {ARCH}")
x86_64_only = pytest.mark.skipif(ARCH != "x86_64", reason="x86_64 ABI check")

# arguments that make each call fail harmlessly in the kernel if the filter let it through (NULL pointers, fd 0,
# flags the kernel rejects: CLONE_NEWUSER|CLONE_FS is EINVAL, so a raw clone never makes a child)
SAFE_ARGS = {"ptrace": [0xFFFF], "personality": [0x0040000], "clone": [0x10000000 | 0x200], "socket": [38, 5, 0],
             "clone3": [0, 0]}
EXPECTED = {name: "ENOSYS" if name in seccomp.ENOSYS_CALLS else "EPERM" for name in TABLE}

# calls one syscall by number with ctypes; `call` returns the result, or the errno's name when it fails
CALL = """
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
PIDFD_OPEN = 434  # the same number on every architecture
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    return errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()) if r == -1 else r
"""
# in a sandbox: every syscall of the table (argv[1]) with its safe arguments (argv[2]) → {name: result}
SWEEP = CALL + """
table, safe = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({name: call(nr, *safe.get(name, [0] * 6)) for name, nr in table.items()}))
"""


# ------------------------------------------------------------------ the program, read without a kernel
def run_bpf(prog: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """A tiny interpreter for the opcodes build_filter emits: the action the kernel would take for one call."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    ins = [struct.unpack("<HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ins[pc]
        if code == 0x20:
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:
            return k
        else:
            hit = {0x15: acc == k, 0x25: acc > k, 0x45: bool(acc & k)}[code]
            pc += jt if hit else jf
        pc += 1


@pytest.mark.parametrize("arch", sorted(seccomp.SYSCALLS))
def test_program_shape_and_decisions(arch):
    prog, table = seccomp.build_filter(arch), seccomp.SYSCALLS[arch]
    n_denied = sum(name in table for name in seccomp.DENIED)
    # 6 (arch check, nr load, ceiling) + 2 per denied call + 2 (clone3) + clone 5 + socket 4+2 + personality 4+5 + 1
    expected = 6 + 2 * n_denied + 2 + 5 + (4 + len(seccomp.DENIED_SOCKET_FAMILIES)) + \
        (4 + len(seccomp.ALLOWED_PERSONALITIES)) + 1
    assert len(prog) % 8 == 0 and len(prog) // 8 == expected <= 4096
    for i in range(0, len(prog), 8):  # every jump lands inside the program
        code, jt, jf, _ = struct.unpack("<HBBI", prog[i:i + 8])
        if code in (0x15, 0x25, 0x45):
            assert i // 8 + 1 + max(jt, jf) < expected
    audit = seccomp.AUDIT_ARCH[arch]
    eperm, enosys = seccomp.RET_ERRNO | errno.EPERM, seccomp.RET_ERRNO | errno.ENOSYS
    assert run_bpf(prog, GETPID[arch], audit) == seccomp.RET_ALLOW
    for foreign in (0x40000003, 0x40000028, 0xC00000B7 if arch == "x86_64" else 0xC000003E):  # i386, ARM, the other
        assert run_bpf(prog, GETPID[arch], foreign) == seccomp.RET_KILL_PROCESS
    for name in seccomp.DENIED:
        if name in table:
            assert run_bpf(prog, table[name], audit) == eperm, name
    assert run_bpf(prog, table["clone3"], audit) == enosys
    assert run_bpf(prog, seccomp.HIGHEST + 1, audit) == enosys
    assert run_bpf(prog, 0x40000000 | GETPID[arch], audit) == enosys  # the x32 bit
    assert run_bpf(prog, table["clone"], audit, 0x11) == seccomp.RET_ALLOW  # SIGCHLD: fork
    assert run_bpf(prog, table["clone"], audit, 0x3D0F00) == seccomp.RET_ALLOW  # glibc's thread flags
    assert run_bpf(prog, table["clone"], audit, 0x10000000 | 0x11) == eperm  # CLONE_NEWUSER
    assert run_bpf(prog, table["socket"], audit, 1) == seccomp.RET_ALLOW  # AF_UNIX
    assert run_bpf(prog, table["socket"], audit, 38) == eperm and run_bpf(prog, table["socket"], audit, 40) == eperm
    assert run_bpf(prog, table["personality"], audit, 0xFFFFFFFF) == seccomp.RET_ALLOW
    assert run_bpf(prog, table["personality"], audit, 0x0040000) == eperm  # ADDR_NO_RANDOMIZE


def test_unknown_architecture_fails_closed(monkeypatch):
    with pytest.raises(seccomp.UnsupportedArch, match="riscv64"):
        seccomp.build_filter("riscv64")
    monkeypatch.setattr(seccomp, "machine", lambda: "riscv64")
    with pytest.raises(seccomp.UnsupportedArch, match="refuses"):
        seccomp.build_filter()
    from agentrl.sandboxes.bwrap_backend import bwrap_available

    if shutil.which("bwrap") and os.geteuid() == 0:  # the reason auto-selection would give
        assert "riscv64" in bwrap_available()


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_no_sandbox_starts_without_its_filter(backend, monkeypatch):
    """An architecture without a table: the sandbox refuses before it makes anything (no_leftovers checks)."""
    monkeypatch.setattr(seccomp, "machine", lambda: "riscv64")
    with pytest.raises((seccomp.UnsupportedArch, SandboxConfigError), match="riscv64"):
        sandbox_of(backend)


# ------------------------------------------------------------------ the filter in a child process on the host
def child(script: str, *argv: str, filtered: bool, nobody: bool = True) -> subprocess.CompletedProcess:
    """Run `script` in a fresh Python child (as nobody when we are root), under the filter if `filtered`."""
    pre = CALL + "from agentrl.sandboxes import seccomp\n"
    if nobody:
        pre += ("if os.geteuid() == 0:\n"
                " os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n")
    if filtered:
        pre += "seccomp.install(seccomp.build_filter())\n"
    return subprocess.run([sys.executable, "-c", pre + script, *argv], capture_output=True, text=True, timeout=120)


PROBE = """
T, out = seccomp.SYSCALLS[seccomp.machine()], {}
out["getpid"] = call(int(sys.argv[1])) == os.getpid()
out["keyctl"], out["ptrace"] = call(T["keyctl"], 0, 0, 0), call(T["ptrace"], 0xFFFF, 0)
out["clone3"], out["beyond"] = call(T["clone3"], 0, 0), call(seccomp.HIGHEST + 1)
out["x32"] = call(0x40000000 | int(sys.argv[1]))
out["af_alg"], out["af_unix"] = call(T["socket"], 38, 5, 0), call(T["socket"], 1, 1, 0)
out["query"], out["no_aslr"] = call(T["personality"], 0xFFFFFFFF), call(T["personality"], 0x0040000)
out["clone_newuser"] = call(T["clone"], 0x10000000 | 0x200)
import subprocess, threading
t = threading.Thread(target=lambda: out.update(thread=True)); t.start(); t.join()
out["subprocess"] = subprocess.run(["true"]).returncode
print(json.dumps(out))
"""


@needs_table
def test_filter_loads_in_a_child_and_denies_only_the_list():
    filtered = json.loads(child(PROBE, str(GETPID[ARCH]), filtered=True).stdout)
    assert filtered == {"getpid": True, "keyctl": "EPERM", "ptrace": "EPERM", "clone3": "ENOSYS", "beyond": "ENOSYS",
                        "x32": "ENOSYS", "af_alg": "EPERM", "af_unix": filtered["af_unix"], "query": 0,
                        "no_aslr": "EPERM", "clone_newuser": "EPERM", "thread": True, "subprocess": 0}, filtered
    assert isinstance(filtered["af_unix"], int) and filtered["af_unix"] >= 0
    plain = json.loads(child(PROBE, str(GETPID[ARCH]), filtered=False).stdout)  # the same calls reach the kernel
    assert plain["keyctl"] != "EPERM" and plain["ptrace"] != "EPERM" and plain["clone3"] == "EINVAL", plain
    assert plain["no_aslr"] == 0 and plain["clone_newuser"] == "EINVAL", plain


INT80_GETPID = """
import mmap
code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])  # mov eax, 20 (i386 getpid); int 0x80; ret
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print(f() == os.getpid())
"""


@x86_64_only
def test_an_i386_syscall_kills_the_process():
    plain = child(INT80_GETPID, filtered=False)
    if plain.stdout.strip() != "True":
        pytest.skip(f"this kernel runs no i386 syscalls (rc {plain.returncode}): nothing to filter")
    r = child(INT80_GETPID, filtered=True)
    assert r.returncode == -31 and r.stdout == "", (r.returncode, r.stdout, r.stderr)  # SIGSYS


def header_numbers(path: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", Path(path).read_text())}


@pytest.mark.parametrize("arch,header", [("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
                                         ("aarch64", "/usr/include/asm-generic/unistd.h")])
def test_numbers_match_the_kernel_headers(arch, header):
    if not Path(header).exists():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    known = header_numbers(header)
    table = {**seccomp.SYSCALLS[arch], "prctl": seccomp.PRCTL[arch]}
    wrong = {n: (nr, known[n]) for n, nr in table.items() if n in known and known[n] != nr}
    assert not wrong
    newer = {n for n in table if n not in known}  # headers older than the table: only the newest calls may miss
    assert all(table[n] > max(known.values()) for n in newer), newer


# the syscalls every x86_64/arm64 kernel has whatever its config (modules, kexec, keys, io_uring... may be off)
CORE = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "unshare", "setns",
        "reboot", "personality", "socket", "clone", "clone3", "syslog", "chroot", "sethostname", "setdomainname",
        "settimeofday", "clock_settime", "vhangup", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
        "fspick", "mount_setattr", "pidfd_getfd", "process_madvise")
SWEEP_HOST = "safe = json.loads(sys.argv[1])\nprint(json.dumps({n: call(nr, *safe.get(n, [0] * 6)) " \
             "for n, nr in seccomp.SYSCALLS[seccomp.machine()].items()}))"
IDENTITY = """
T, out = seccomp.SYSCALLS[seccomp.machine()], {}
class iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
def copy(name):  # 28 bytes from one buffer of ours to another, through the call `name` on ourselves
    src, dst = ctypes.create_string_buffer(b"agentrl" * 4), ctypes.create_string_buffer(28)
    a, b = (iovec(ctypes.addressof(dst), 28), iovec(ctypes.addressof(src), 28))[:: 1 if name.endswith("readv") else -1]
    n = call(T[name], os.getpid(), ctypes.addressof(a), 1, ctypes.addressof(b), 1, 0)
    return n == 28 and dst.raw == src.raw[:28]
out["process_vm_readv"], out["process_vm_writev"] = copy("process_vm_readv"), copy("process_vm_writev")
call(T["personality"], 0x0040000)
out["personality"] = open("/proc/self/personality").read().strip() == "00040000"
import stat
fd = call(T["socket"], 1, 1, 0)
out["socket"] = stat.S_ISSOCK(os.fstat(fd).st_mode)
pidfd = call(PIDFD_OPEN, os.getpid(), 0)
got = call(T["pidfd_getfd"], pidfd, 1, 0)
out["pidfd_getfd"] = isinstance(got, int) and os.fstat(got).st_ino == os.fstat(1).st_ino
out["kcmp"] = call(T["kcmp"], os.getpid(), os.getpid(), 0, 1, 1) in (0, "ENOSYS")  # KCMP_FILE: fd 1 is fd 1
prctl = seccomp.PRCTL[seccomp.machine()]
# PR_GET_NO_NEW_PRIVS, PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS
out["prctl"] = (call(prctl, 39, 0, 0, 0, 0), call(prctl, 38, 1, 0, 0, 0), call(prctl, 39, 0, 0, 0, 0))
print(json.dumps(out))
"""


@needs_table
def test_numbers_are_the_running_kernels():
    """Unfiltered (as nobody), each number is a syscall this kernel knows (not ENOSYS) and the identity checks
    show it is the one named; filtered, every call the kernel knows answers EPERM (clone3 ENOSYS)."""
    safe = json.dumps(SAFE_ARGS)
    plain = json.loads(child(SWEEP_HOST, safe, filtered=False).stdout)
    filtered = json.loads(child(SWEEP_HOST, safe, filtered=True).stdout)
    missing = [n for n in CORE if plain[n] == "ENOSYS"]
    assert not missing, plain
    known = [n for n in TABLE if plain[n] != "ENOSYS"]
    assert {n: filtered[n] for n in known} == {n: EXPECTED[n] for n in known}
    identity = json.loads(child(IDENTITY, filtered=False, nobody=False).stdout)  # calls on itself only
    assert identity == {"process_vm_readv": True, "process_vm_writev": True, "personality": True, "socket": True,
                        "pidfd_getfd": True, "kcmp": True, "prctl": [0, 0, 1]}, identity


@needs_table
@pytest.mark.skipif(shutil.which("perl") is None, reason="no perl on this host")
def test_the_perl_loader_installs_the_filter():
    """The loader the docker backend runs in every exec, run here: the command it starts is filtered."""
    prog = seccomp.build_filter()
    r = subprocess.run(seccomp.loader_argv(prog, [sys.executable, "-c", CALL + "print(call(int(sys.argv[1]), 0, 0, 0))",
                                                  str(TABLE["keyctl"])]), capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "EPERM\n"), r.stderr
    r = subprocess.run(seccomp.loader_argv(prog, ["agentrl-no-such-command"]), capture_output=True, text=True)
    assert r.returncode == 127 and "agentrl-seccomp: agentrl-no-such-command" in r.stderr


# ------------------------------------------------------------------ inside real sandboxes
@needs_table
def test_denied_syscalls_answer_eperm_inside(sb):
    sb.write_file("/tmp/sweep.py", SWEEP)
    r = sb.exec(["python3", "/tmp/sweep.py", json.dumps(TABLE), json.dumps(SAFE_ARGS)], timeout=60)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == EXPECTED


SIBLINGS = CALL + """
import subprocess
T = json.loads(sys.argv[1])
wait = "import sys; print('ready', flush=True); sys.stdin.read()"
sib = subprocess.Popen([sys.executable, "-c", wait], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
closed = subprocess.Popen([sys.executable, "-c", "import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); " + wait],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # PR_SET_DUMPABLE 0
assert sib.stdout.readline() == b"ready\\n" and closed.stdout.readline() == b"ready\\n"
out = {"attach": call(T["ptrace"], 16, sib.pid, 0, 0)}  # PTRACE_ATTACH
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, json.dumps(call(T["ptrace"], 0, 0, 0, 0)).encode())  # PTRACE_TRACEME
    os._exit(0)
os.waitpid(pid, 0)
out["traceme"] = json.loads(os.read(r, 100))
start = int(open(f"/proc/{sib.pid}/maps").readline().split("-")[0], 16)
buf = ctypes.create_string_buffer(64)
class iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local, remote = iovec(ctypes.addressof(buf), 64), iovec(start, 64)
for name in ("process_vm_readv", "process_vm_writev"):
    out[name] = call(T[name], sib.pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
out["kcmp"] = call(T["kcmp"], os.getpid(), sib.pid, 0, 0, 0)  # KCMP_FILE
out["pidfd_getfd"] = call(T["pidfd_getfd"], call(PIDFD_OPEN, sib.pid, 0), 0, 0)
try:
    open(f"/proc/{closed.pid}/mem", "rb").close()
    out["mem_of_non_dumpable"] = "opened"
except OSError as e:
    out["mem_of_non_dumpable"] = errno.errorcode[e.errno]
for p in (sib, closed):
    p.kill()
print(json.dumps(out))
"""


@needs_table
def test_siblings_cannot_ptrace_or_read_each_other(sb):
    """Two processes of one command (same uid): attach, TRACEME, cross-process memory, kcmp and fd theft all
    fail; a process that made itself non-dumpable also keeps its /proc/<pid>/mem closed to its siblings."""
    sb.write_file("/tmp/siblings.py", SIBLINGS)
    r = sb.exec(["python3", "/tmp/siblings.py", json.dumps(TABLE)], timeout=60)
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"attach": "EPERM", "traceme": "EPERM", "process_vm_readv": "EPERM",
                                    "process_vm_writev": "EPERM", "kcmp": "EPERM", "pidfd_getfd": "EPERM",
                                    "mem_of_non_dumpable": "EACCES"}


ORDINARY = r"""set -e
mkdir -p /workspace/w && cd /workspace/w && git init -q && git config user.email a@b.c && git config user.name a
printf 'def add(a, b):\n    return a + b\n' > calc.py
printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' > test_calc.py
git add -A && git commit -qm init && echo "commits=$(git log --oneline | wc -l)"
python3 -m pytest -q -p no:cacheprovider test_calc.py | tail -1
python3 - <<'EOF'
import concurrent.futures, multiprocessing, subprocess, threading
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    print("threads", sum(ex.map(lambda i: i, range(10))))
sub = subprocess.run(["bash", "-c", "echo $((6 * 7)) | cat"], capture_output=True, text=True)
print("subprocess", sub.stdout.strip())
with multiprocessing.Pool(2) as pool:
    print("pool", sum(pool.map(abs, [-1, -2, -3])))
EOF
grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status | tr -s '\t' ' '
"""


def test_ordinary_work_runs_under_the_filter(sb):
    r = sb.exec(ORDINARY, timeout=120)
    assert r.exit_code == 0, r.output
    for line in ("commits=1", "1 passed", "threads 45", "subprocess 42", "pool 6", "Seccomp: 2", "NoNewPrivs: 1"):
        assert line in r.output, r.output


@pytest.mark.parametrize("backend", [p for p in BACKEND_PARAMS if p.values[0] == "docker"])
def test_docker_refuses_an_image_where_the_filter_cannot_load(backend, monkeypatch):
    """The loader fails (here: its interpreter is missing): the sandbox is refused and its container removed."""
    from agentrl.sandboxes import docker_backend

    monkeypatch.setattr(docker_backend, "_filter_checked", set())
    real = seccomp.loader_argv
    monkeypatch.setattr(seccomp, "loader_argv", lambda prog, argv: ["agentrl-no-perl", *real(prog, argv)[1:]])
    with pytest.raises(SandboxError, match="seccomp filter does not load"):
        sandbox_of(backend)
