"""
Multi-turn helpers: kevald's result as the next turn's feedback message, and
the link from a turn to its parent (tags.parent = the parent's id,
tags.turn = the parent's turn + 1, run_id and labels carried over), so the
history of a refinement can be read back (`history(run_id=...)`).
"""
import copy

from .models import Result, Submission

LOG_LINES = 12
MISMATCHES = 3


def _first_error_block(log, max_lines):
    """The first error's diagnostic block of a kevald compile log (kevald puts it first), trimmed."""
    lines = (log or "").splitlines()
    start = next((i for i, l in enumerate(lines) if "error" in l), 0)
    out = lines[start:start + max_lines]
    more = len(lines) - start - len(out)
    if more > 0:
        out.append(f"... ({more} more log lines)")
    return "\n".join(out)


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def feedback_message(x, log_lines=LOG_LINES, mismatches=MISMATCHES):
    """
    The feedback for the next turn from @x (a Submission, Result or dict):
    verdict; the compile log from its first error; the first mismatches per
    output buffer and shape; the CUDA error and where it happened; timing
    and resources; kevald's own one-paragraph feedback last.
    """
    if isinstance(x, dict):
        x = Submission.from_dict(x) if "state" in x else Result.from_dict(x)
    sub = x if isinstance(x, Submission) else None
    res = x.result if sub else x
    if res is None:
        state = sub.state if sub else "unknown"
        return f"Verdict: pending (state {state}); no result yet."
    out = [f"Verdict: {res.verdict}."]
    c = res.compile
    if c is not None:
        if c.ok is False:
            out.append("The kernel did not compile" + (f" ({c.error})" if c.error and c.error != "compile" else "")
                       + ". Compiler output from the first error:")
            out.append(_first_error_block(c.log, log_lines))
        elif c.kernels:
            ks = ", ".join(f"{k.name} ({k.registers} registers, {k.shared_static or 0} B shared, "
                           f"{k.local or 0} B local{', spills' if (k.spill_stores or 0) > 0 else ''})"
                           for k in c.kernels[:4])
            out.append(f"Compiled kernels: {ks}.")
    e = res.error
    if e is not None and e.kind not in (None, "compile"):
        where = []
        for label, v in (("shape", e.shape), ("phase", e.phase), ("trial", e.trial), ("launch", e.launch),
                         ("kernel", e.kernel)):
            if v is not None:
                where.append(f"{label} {v}")
        what = " ".join(p for p in (e.name, e.message) if p)
        out.append(f"Error ({e.kind}): {what}" + (f" [{', '.join(where)}]" if where else "") + ".")
    if res.correctness is not None and res.correctness.shapes:
        for sh in res.correctness.shapes:
            if sh.passed:
                continue
            bits = []
            for flag, msg in (("guard_ok", "wrote out of bounds"), ("inputs_intact", "modified an input"),
                              ("deterministic", "gave different results on repeated runs")):
                if getattr(sh, flag) is False:
                    bits.append(msg)
            for b in sh.buffers:
                wrong = (b.mismatches or 0) + (b.nan_inf_mismatches or 0)
                if not wrong:
                    continue
                firsts = "; ".join(f"[{m.index}] got {_fmt(m.got)} want {_fmt(m.want)}"
                                   for m in b.first_mismatches[:mismatches])
                nan = f", {b.nan_inf_mismatches} of them NaN/Inf disagreements" if b.nan_inf_mismatches else ""
                bits.append(f"{b.name}: {wrong} of {b.count} elements wrong{nan} (max abs error "
                            f"{_fmt(b.max_abs)}); first: {firsts}")
            out.append(f"Shape '{sh.shape}' failed: " + ("; ".join(bits) if bits else "mismatch") + ".")
    t = res.timing
    if t is not None and t.shapes:
        per = ", ".join(f"{s.shape}: {s.candidate.median_ms:.4g} ms vs reference {s.reference.median_ms:.4g} ms"
                        for s in t.shapes if s.candidate and s.reference
                        and s.candidate.median_ms is not None and s.reference.median_ms is not None)
        if t.speedup is not None:
            out.append(f"Speedup {t.speedup:.3g}x (geometric mean)" + (f"; {per}" if per else "") + ".")
    if res.resources:
        rs = ", ".join(f"{r.get('kernel')}: occupancy {r.get('occupancy', {}).get('fraction', '?')}"
                       for r in res.resources[:4] if isinstance(r, dict))
        if rs:
            out.append(f"Resources: {rs}.")
    if res.feedback:
        out.append(res.feedback)
    return "\n".join(out)


def link(submission, parent):
    """
    A copy of @submission (dict) whose tags say it follows @parent (a
    Submission, its dict, or an id): tags.parent = parent id, tags.turn =
    parent's turn + 1 (1 when unknown), run_id and labels inherited unless set.
    """
    sub = copy.deepcopy(submission)
    tags = dict(sub.get("tags") or {})
    if isinstance(parent, dict):
        parent = Submission.from_dict(parent)
    if isinstance(parent, Submission):
        ptags = parent.tags or {}
        tags["parent"] = parent.id
        tags.setdefault("turn", int(ptags.get("turn", 0)) + 1)
        for k in ("run_id", "labels", "step", "sample"):
            if k in ptags and k not in tags:
                tags[k] = ptags[k]
    else:
        tags["parent"] = int(parent)
        tags.setdefault("turn", 1)
    sub["tags"] = tags
    return sub
