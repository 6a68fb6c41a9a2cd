#!/usr/bin/python3
"""test_check - tools/kernelbench/check.py passes on the committed modules and fails on broken ones.

Runs check.py (tiny shape sets, C reference from numpy) on tasks/kernelbench,
expecting every module to run and all tasks with a C task to agree; then on a
copy in which four modules are broken in four ways (an output off by 0.1%, a
wrong sign in a fused op, a dropped keepdim, a NaN), expecting exactly those
four to fail. Exits 77 (skip) where torch does not import (check.py's own 77):
scripts/dev deps --torch installs it.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("KEVALD_SOURCE_ROOT") or os.path.abspath(os.path.join(HERE, "..", ".."))
KB = os.path.join(ROOT, "tasks", "kernelbench")
CHECK = os.path.join(HERE, "check.py")

BREAK = {
    "level1/l1_19_relu.py": ("return torch.relu(x)", "return torch.relu(x) * 1.001"),
    "level2/l2_87_conv2d_subtract_subtract_mish.py": ("x = x - self.subtract_value_2",
                                                      "x = x + self.subtract_value_2"),
    "level1/l1_47_sum_reduction_over_a_dimension.py": ("keepdim=True", "keepdim=False"),
    "level2/l2_4_conv2d_mish_mish.py": ("return F.mish(x)", "return torch.log(F.mish(x) - 10)"),
}


def run(env_dir=None):
    env = dict(os.environ)
    if env_dir:
        env["KEVALD_KB_DIR"] = env_dir
    r = subprocess.run([sys.executable, CHECK, "--shapes", "tiny", "--c-ref", "numpy"], env=env,
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def main():
    fails = 0
    rc, out = run()
    if rc == 77:
        print(out.strip())
        return 77
    summary = [ln for ln in out.splitlines() if "module runs ok" in ln]
    good = rc == 0 and summary and summary[0].startswith("200 of 200") and "126 of 126 agree" in summary[0]
    print("%s committed modules: rc %d, %s" % ("ok  " if good else "FAIL", rc, summary))
    if not good:
        print(out)
        fails += 1
    with tempfile.TemporaryDirectory() as tmp:
        kb = os.path.join(tmp, "kernelbench")
        shutil.copytree(KB, kb)
        for rel, (old, new) in BREAK.items():
            path = os.path.join(kb, rel)
            text = open(path).read()
            assert old in text, (rel, old)
            open(path, "w").write(text.replace(old, new, 1))
        rc, out = run(kb)
        failed = sorted(ln.split()[1] for ln in out.splitlines() if ln.startswith("FAIL"))
        want = sorted(os.path.basename(r)[:-3] for r in BREAK)
        good = rc == 1 and failed == want
        print("%s broken copy: rc %d, failed %s" % ("ok  " if good else "FAIL", rc, failed))
        for ln in out.splitlines():
            if ln.startswith("FAIL"):
                print("     " + ln[:200])
        if not good:
            print(out)
            fails += 1
    print("failures:", fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
