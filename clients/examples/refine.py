#!/usr/bin/env python3
"""
refine.py - a multi-turn refinement loop driven by kevald's feedback.

A scripted policy stands in for an LLM: it keeps a candidate for the ReLU
task (l1_19_relu) with four defects, submits it, reads kevald's answer
(verdict, compile log, plan check, mismatches, speedup) and repairs the one
defect the feedback points at, then submits the next turn, linked to its
parent (tags.parent, tags.turn, one run_id):

  turn 1  a typo                    -> compile_error: the log names the identifier; fix it
  turn 2  the length passed as i32  -> rejected: "argument 2 is i32 (4 bytes) but the
                                       kernel's parameter 2 is 8 bytes"; pass it as u64
  turn 3  an off-by-one loop bound  -> incorrect: the first mismatch is the last element;
                                       fix the bound
  turn 4  too few threads           -> correct but slow (speedup < 1): vectorize with float4
                                       and launch enough blocks
  turn 5  float4, full grid         -> correct and faster: stop

The policy acts on what the feedback says, not on the turn number: a fix is
only made when the feedback shows its symptom, and a turn whose feedback
matches no known symptom ends the loop as stuck (exit 1).

In compile mode (no GPU) kevald can judge compilation and the plan only:
the loop goes through turns 1 and 2, then stops at the first candidate that
compiles and passes the plan check, says why, and exits 0. On a GPU host
with --mode full it runs the whole story.

    python3 refine.py --server http://127.0.0.1:8080 --mode compile
    python3 refine.py --server http://GPUHOST:8080 --mode full
"""
import argparse
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
import kevald  # noqa: E402
from kevald import reward, turns  # noqa: E402

TASK = "l1_19_relu"

SCALAR = r'''// refine.py turn {turn}
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)
{{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             {cond}; i += stride) {{
                float v = {load};
                y[i] = v > 0.0f ? v : 0.0f;
        }}
}}
'''

VECTOR = r'''// refine.py turn {turn}: float4 loads and stores, scalar tail
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)
{{
        unsigned long long n4 = n / 4, stride = (unsigned long long)gridDim.x * blockDim.x;
        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        for (unsigned long long i = t; i < n4; i += stride) {{
                float4 a = reinterpret_cast<const float4*>(x)[i];
                a.x = fmaxf(a.x, 0.0f);
                a.y = fmaxf(a.y, 0.0f);
                a.z = fmaxf(a.z, 0.0f);
                a.w = fmaxf(a.w, 0.0f);
                reinterpret_cast<float4*>(y)[i] = a;
        }}
        for (unsigned long long i = n4 * 4 + t; i < n; i += stride)
                y[i] = fmaxf(x[i], 0.0f);
}}
'''


class ScriptedPolicy:
    """The candidate's state: each defect is a flag the feedback can clear."""

    def __init__(self):
        self.typo = True            # x[i] spelt xx[i]
        self.n_type = "i32"         # the length passed as i32; the kernel takes unsigned long long
        self.off_by_one = True      # loop bound i + 1 < n
        self.vectorized = False     # scalar loop on 132 x 128 threads
        self.log = []

    def candidate(self, turn):
        if self.vectorized:
            src = VECTOR.format(turn=turn)
            grid, block = ["min(ceil_div(B * D, 1024), 1048576)"], 256
        else:
            src = SCALAR.format(turn=turn, cond="i + 1 < n" if self.off_by_one else "i < n",
                                load="xx[i]" if self.typo else "x[i]")
            grid, block = [132], 128
        plan = [{"kernel": "relu", "grid": grid, "block": [block], "shared": "0",
                 "args": ["x", "y", {"type": self.n_type, "value": "B * D"}]}]
        return src, plan

    def act(self, sub, mode):
        """Read the feedback of @sub and fix one thing. Return 'continue', 'done' or 'stuck'."""
        res = sub.result
        v = sub.verdict
        if v == "compile_error":
            first = res.compile.first_error or ""
            m = re.search(r'identifier "(\w+)" is undefined', first)
            if m and m.group(1) == "xx" and self.typo:
                self.typo = False
                return self._say(f"the compiler says '{m.group(1)}' is undefined: it is a typo for 'x'")
            return self._say(f"a compile error I cannot fix: {first}", "stuck")
        if v == "rejected":
            msg = (res.error.message if res.error else "") or res.feedback or ""
            m = re.search(r"argument (\d+) is (\w+) \((\d) bytes\) but the kernel's parameter \d+ is (\d) bytes", msg)
            if m and m.group(2) == "i32" and m.group(4) == "8":
                self.n_type = "u64"
                return self._say(f"the plan passes argument {m.group(1)} as i32 but the kernel takes 8 bytes: "
                                 "pass B * D as u64")
            return self._say(f"a rejection I cannot fix: {msg}", "stuck")
        if v == "compiled":
            return self._say("it compiles and the plan fits the kernel; compile mode cannot check correctness "
                             "or speed, so this is as far as it goes here (run with --mode full on a GPU host)",
                             "done")
        if v == "incorrect":
            for shape in res.correctness.shapes if res.correctness else []:
                for b in shape.buffers:
                    wrong = (b.mismatches or 0) + (b.nan_inf_mismatches or 0)   # value and NaN/Inf disagreements
                    if b.first_mismatches and wrong == 1 and b.first_mismatches[0].index == b.count - 1:
                        if self.off_by_one:
                            self.off_by_one = False
                            return self._say(f"shape '{shape.shape}': only the last element ({b.count - 1}) "
                                             "is wrong: the loop stops one short; fix the bound")
            return self._say("wrong results I cannot explain", "stuck")
        if v == "correct":
            s = res.speedup
            if not self.vectorized and (s is None or s < 1.0):
                self.vectorized = True
                return self._say(f"correct but {s:.3g}x the reference: too few threads and scalar loads; "
                                 "use float4 and a full grid")
            return self._say(f"correct at {s:.3g}x the reference: done", "done")
        return self._say(f"verdict {v}: nothing I know how to fix", "stuck")

    def _say(self, text, outcome="continue"):
        self.log.append(text)
        print(f"  policy: {text}")
        return outcome


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("KEVALD_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--token", default=os.environ.get("KEVALD_TOKEN"))
    ap.add_argument("--mode", choices=["compile", "full"], default="compile")
    ap.add_argument("--max-turns", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=600, help="seconds to wait for one turn")
    ap.add_argument("--timing", choices=["fast", "precise"], default="fast")
    a = ap.parse_args(argv)

    run_id = f"refine-{int(time.time())}-{os.getpid()}"
    policy = ScriptedPolicy()
    parent = None
    outcome = "stuck"
    print(f"refine {run_id}: task {TASK}, mode {a.mode}, server {a.server}")
    with kevald.Client(a.server, token=a.token) as c:
        for turn in range(1, a.max_turns + 1):
            src, plan = policy.candidate(turn)
            sub = {"task": TASK, "source": src, "plan": plan, "mode": a.mode, "priority": "interactive",
                   "tags": {"run_id": run_id, "turn": turn}}
            if a.mode == "full":
                sub["timing"] = a.timing
            if parent is not None:
                sub = turns.link(sub, parent)
            done = c.evaluate(sub, timeout=a.timeout)
            r = reward.reward(done)
            print(f"\nturn {turn}: submission {done.id} (parent {done.tags.get('parent')}): {done.verdict}, "
                  f"reward {'-' if r is None else f'{r:.3f}'}")
            if not done.done:
                print(f"  still {done.state} after {a.timeout:.0f} s (no GPU in full mode?)")
                outcome = "stuck"
                break
            print("  " + turns.feedback_message(done).replace("\n", "\n  "))
            outcome = policy.act(done, a.mode)
            parent = done
            if outcome != "continue":
                break
    chain = list(kevald.Client(a.server, token=a.token).history(run_id=run_id))[::-1]
    print(f"\n{len(chain)} turns: " + " -> ".join(f"{s.id}:{s.verdict}" for s in chain))
    linked = all(s.tags.get("parent") == p.id and s.tags.get("turn") == p.tags.get("turn") + 1
                 for p, s in zip(chain, chain[1:]))
    print(f"chain linked by tags.parent/tags.turn: {'yes' if linked else 'NO'}; outcome: {outcome}")
    return 0 if outcome == "done" and linked else 1


if __name__ == "__main__":
    sys.exit(main())
