#!/usr/bin/env python3
"""
syscalls - the system calls an unsandboxed run worker made after its HELLO
(strace -f output, run.sh's measuring step), against the torch-run profile's
allowlist as sandbox/seccomp.c writes it: the calls the profile would trap.
Usage: syscalls.py STRACE_FILE
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SECCOMP = (ROOT / "sandbox" / "seccomp.c").read_text()
# calls the profile allows only with conditions (argument checks) or answers with an error
CONDITIONAL = {"clone": "only with CLONE_THREAD", "clone3": "ENOSYS (glibc falls back to clone)",
               "tgkill": "only on itself", "prctl": "thread names and reads only",
               "prlimit64": "reading, or STACK/CPU on itself", "openat": "read-only (writing: EACCES)",
               "open": "EACCES"}


def allowlist():
    names = set()
    for arr in ("allow_common", "allow_gpu", "allow_torch_run"):
        m = re.search(r"static const char \*const " + arr + r"\[\] = \{(.*?)\};", SECCOMP, re.S)
        names |= set(re.findall(r'"([a-z0-9_]+)"', m.group(1)))
    return names


def main(path):
    lines = Path(path).read_text(errors="replace").splitlines()
    # one worker per job (strace -A appends each): count from each HELLO to the next worker's execve
    seen, counting, hellos = {}, False, 0
    for ln in lines:
        if 'write(' in ln and '"KVF1\\1' in ln:
            counting, hellos = True, hellos + 1
            continue
        if re.match(r"^\d+\s+execve\(", ln) and '"--role", "run"' in ln:   # the next worker starts
            counting = False
            continue
        m = re.match(r"^\d+\s+([a-z0-9_]+)\(", ln) or re.match(r"^\d+\s+<\.\.\. ([a-z0-9_]+) resumed>", ln)
        if m and counting:
            seen[m.group(1)] = seen.get(m.group(1), 0) + 1
    if not hellos:
        print("no HELLO write found in", path)
        return 1
    allowed = allowlist()
    missing = sorted(n for n in seen if n not in allowed and n not in CONDITIONAL)
    print(f"after HELLO ({hellos} workers): {len(seen)} distinct system calls; allowed {len(allowed)} + "
          f"{len(CONDITIONAL)} conditional")
    for n in sorted(seen):
        tag = "MISSING" if n in missing else ("cond" if n in CONDITIONAL else "ok")
        print(f"  {tag:7s} {n:24s} {seen[n]:8d}" + (f"   ({CONDITIONAL[n]})" if n in CONDITIONAL else ""))
    print("torch-run would trap:", " ".join(missing) if missing else "nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
