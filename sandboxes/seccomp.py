"""A seccomp filter (classic BPF, built here with `struct`) that every sandboxed command runs under.

Docker gives each container its default seccomp profile; bwrap gives nothing unless handed a compiled filter
(`--seccomp FD`). This module builds that filter; bwrap loads it, and the docker backend stacks the same filter on
top of Docker's own profile with a few lines of perl run first in every exec (LOADER; seccomp filters stack and
the strictest answer wins), because Docker's default profile lets processes of one uid ptrace each other on
kernels >= 4.8 (and Docker 20.10's also allows io_uring).

What the filter does, in order:
1. `seccomp_data.arch` must be the running architecture (x86_64 or aarch64), else the process is killed: an
   i386 `int 0x80` on x86_64, or an AArch32 call on arm64, would otherwise be matched against the wrong numbers.
   Any other architecture fails closed: `build_filter` raises UnsupportedArch, and no sandbox starts.
2. Syscall numbers above HIGHEST get ENOSYS. That covers x32 calls on x86_64 (bit 0x40000000 set: the x32 ABI
   shares the x86_64 audit arch, so its numbers would slip past a deny list) and syscalls newer than this table,
   which Docker's allow-list profile refuses too (with EPERM; ENOSYS here lets libc fall back).
3. The deny list (DENIED) gets EPERM; `clone3` gets ENOSYS, so glibc falls back to `clone`.
4. Arguments: `clone` with a namespace flag, `socket` of AF_ALG or AF_VSOCK, and `personality` other than the
   values Docker allows get EPERM.
5. Everything else is allowed.

Where the facts come from:
- The deny list is what Docker's default profile (moby/profiles `seccomp/default.json` at commit cd3bed8)
  does not allow a container that, like ours, has all capabilities dropped: every syscall of the x86_64 table
  that is not on its unconditional allow-list (those it allows only with a capability: CAP_SYS_ADMIN,
  CAP_SYS_PTRACE, CAP_SYS_MODULE, ...), plus the ones it allows and we do not: ptrace, process_vm_readv,
  process_vm_writev (allowed there on kernels >= 4.8) and name_to_handle_at. Its argument rules for clone
  (mask 0x7E020000), socket (families 38, 40) and personality (0, 8, 0x20000, 0x20008, 0xffffffff) are the
  ones in step 4.
- Syscall numbers: the kernel's tables (arch/x86/entry/syscalls/syscall_64.tbl; include/uapi/asm-generic/
  unistd.h for arm64; scripts/syscall.tbl for 424 and up, which every architecture shares). The tests check
  them against the kernel headers and the running kernel.
- The BPF layout (struct seccomp_data, sock_filter, SECCOMP_RET_*): include/uapi/linux/seccomp.h, filter.h.

What it does not cover: a process may still open /proc/<sibling>/mem of a same-uid process that is dumpable
(that check is the kernel's ptrace access check, not a syscall number); a process that must not be read or
written by its siblings makes itself non-dumpable (prctl PR_SET_DUMPABLE 0). docs/sandboxes.md says more.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

from agentrl.errors import SandboxError

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
HIGHEST = 466  # removexattrat, the newest syscall Docker's profile allows; above it, ENOSYS
NS_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
DENIED_SOCKET_FAMILIES = (38, 40)  # AF_ALG (kernel crypto API), AF_VSOCK
ALLOWED_PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # PER_LINUX, PER_LINUX32, UNAME26, both, query

# numbers 424 and up are the same on every architecture
_COMMON = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438,
    "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443, "set_mempolicy_home_node": 450,
    "lsm_get_self_attr": 459, "lsm_set_self_attr": 460, "lsm_list_modules": 461,
}
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "socket": 41, "clone": 56, "ptrace": 101, "syslog": 103, "uselib": 134, "personality": 135, "ustat": 136,
        "sysfs": 139, "vhangup": 153, "pivot_root": 155, "_sysctl": 156, "chroot": 161, "acct": 163,
        "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
        "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173, "create_module": 174,
        "init_module": 175, "delete_module": 176, "get_kernel_syms": 177, "query_module": 178, "quotactl": 179,
        "nfsservctl": 180, "getpmsg": 181, "putpmsg": 182, "afs_syscall": 183, "tuxcall": 184, "security": 185,
        "lookup_dcookie": 212, "clock_settime": 227, "vserver": 236, "mbind": 237, "set_mempolicy": 238,
        "get_mempolicy": 239, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
        "migrate_pages": 256, "unshare": 272, "move_pages": 279, "perf_event_open": 298, "fanotify_init": 300,
        "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
        "userfaultfd": 323, **_COMMON,
    },
    "aarch64": {
        "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "nfsservctl": 42, "chroot": 51,
        "vhangup": 58, "quotactl": 60, "acct": 89, "personality": 92, "unshare": 97, "kexec_load": 104,
        "init_module": 105, "delete_module": 106, "clock_settime": 112, "syslog": 116, "ptrace": 117, "reboot": 142,
        "sethostname": 161, "setdomainname": 162, "settimeofday": 170, "socket": 198, "add_key": 217,
        "request_key": 218, "keyctl": 219, "clone": 220, "swapon": 224, "swapoff": 225, "mbind": 235,
        "get_mempolicy": 236, "set_mempolicy": 237, "migrate_pages": 238, "move_pages": 239, "perf_event_open": 241,
        "fanotify_init": 262, "name_to_handle_at": 264, "open_by_handle_at": 265, "setns": 268,
        "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "finit_module": 273, "bpf": 280,
        "userfaultfd": 282, "kexec_file_load": 294, **_COMMON,
    },
}
ARG_RULES = ("clone", "socket", "personality")  # decided on their first argument (step 4)
ENOSYS_CALLS = ("clone3",)
DENIED = tuple(sorted({n for table in SYSCALLS.values() for n in table} - set(ARG_RULES) - set(ENOSYS_CALLS)))
"""Syscalls answered EPERM (those an architecture lacks are skipped there)."""

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_ABS, _JEQ, _JGT, _JSET, _RET = 0x20, 0x15, 0x25, 0x45, 0x06
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args are u64; the low word comes first on LE)


class UnsupportedArch(SandboxError):
    """No syscall table here for this machine's architecture: no filter, so no sandbox (fail closed)."""


def machine() -> str:
    """This host's architecture, named as SYSCALLS names it (amd64 → x86_64, arm64 → aarch64)."""
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def _ret(value: int) -> bytes:
    return _ins(_RET, value)


def build_filter(arch: str | None = None) -> bytes:
    """The filter for `arch` (default: this machine) as an array of struct sock_filter, ready for
    `bwrap --seccomp FD` or prctl(PR_SET_SECCOMP); raises UnsupportedArch for an architecture not in SYSCALLS."""
    arch = arch or machine()
    if arch not in SYSCALLS:
        raise UnsupportedArch(f"no seccomp syscall table for architecture {arch!r} (have {', '.join(SYSCALLS)}): "
                              "the sandbox refuses to run without its filter")
    nr = SYSCALLS[arch]
    eperm, enosys = _ret(RET_ERRNO | errno.EPERM), _ret(RET_ERRNO | errno.ENOSYS)
    prog = [_ins(_LD_ABS, _ARCH), _ins(_JEQ, AUDIT_ARCH[arch], jt=1), _ret(RET_KILL_PROCESS),
            _ins(_LD_ABS, _NR), _ins(_JGT, HIGHEST, jf=1), enosys]
    for name in DENIED:
        if name in nr:
            prog += [_ins(_JEQ, nr[name], jf=1), eperm]
    prog += [_ins(_JEQ, nr["clone3"], jf=1), enosys]
    # each argument rule: if nr matches, load the first argument's low word and return; else skip the block
    def match_any(values: tuple[int, ...], hit: bytes, miss: bytes) -> list[bytes]:  # a JEQ per value → hit
        return [*(_ins(_JEQ, v, jt=len(values) - i) for i, v in enumerate(values)), miss, hit]

    blocks = {
        "clone": [_ins(_JSET, NS_FLAGS, jf=1), eperm, _ret(RET_ALLOW)],
        "socket": match_any(DENIED_SOCKET_FAMILIES, hit=eperm, miss=_ret(RET_ALLOW)),
        "personality": match_any(ALLOWED_PERSONALITIES, hit=_ret(RET_ALLOW), miss=eperm),
    }
    for name in ARG_RULES:
        body = [_ins(_LD_ABS, _ARG0), *blocks[name]]
        prog += [_ins(_JEQ, nr[name], jf=len(body)), *body]
    prog.append(_ret(RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def install(program: bytes) -> None:
    """Load `program` into this process and all it starts (sets no_new_privs first, as an unprivileged caller
    must); for tests and tools on the host: sandboxes load it through bwrap or LOADER."""
    libc = ctypes.CDLL(None, use_errno=True)
    fprog = _SockFprog(len(program) // 8, program)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # NO_NEW_PRIVS, SECCOMP
        raise OSError(ctypes.get_errno(), f"seccomp: {os.strerror(ctypes.get_errno())}")


# `perl -e LOADER <prctl nr> <program hex> <argv...>`: inside a container, set no_new_privs, install the filter,
# exec argv (execvp). perl because perl-base is in every Debian image and starts far faster than python with
# ctypes would, on every command. struct sock_fprog is a u16 length, padding, then a pointer ("S x6 P", LP64).
LOADER = (
    'my $n = shift; my $f = pack("H*", shift);'
    ' syscall($n, 38, 1, 0, 0, 0) == 0 && syscall($n, 22, 2, pack("S x6 P", length($f) / 8, $f), 0, 0) == 0'
    ' or do { print STDERR "agentrl-seccomp: $!\\n"; exit 125 };'
    ' exec { $ARGV[0] } @ARGV or do { print STDERR "agentrl-seccomp: $ARGV[0]: $!\\n"; exit 127 }'
)
PRCTL = {"x86_64": 157, "aarch64": 167}


def loader_argv(program: bytes, argv: list[str], arch: str | None = None) -> list[str]:
    """`argv` behind the in-sandbox loader that installs `program` first: for docker execs, which have no
    `--seccomp`; Docker's own profile stays in force underneath (filters stack, the strictest answer wins)."""
    return ["perl", "-e", LOADER, str(PRCTL[arch or machine()]), program.hex(), *argv]
