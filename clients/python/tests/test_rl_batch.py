"""
An RL trainer's step against the real server (compile mode, no GPU): a
batch of policy outputs where most are wrong in the ways policies are
wrong. Every sample gets a stored verdict and a reward; one history call
brings them all back with their results.
"""
import kevald
from conftest import RELU, RELU_PLAN, run_id, unique

NO_EXTERN_C = RELU.replace('extern "C" ', "")
FOUR_ARGS = RELU.replace("unsigned long long n)", "unsigned long long n, int extra)")


def plan(**edit):
    p = [dict(RELU_PLAN[0])]
    p[0]["args"] = list(p[0]["args"])
    for k, v in edit.items():
        if v is None:
            del p[0][k]
        else:
            p[0][k] = v
    return p


def sub(source=None, the_plan=None, **extra):
    s = {"task": "l1_19_relu", "mode": "compile", "source": unique(RELU) if source is None else source,
         "plan": RELU_PLAN if the_plan is None else the_plan}
    s.update(extra)
    return s


# (what is wrong, the submission, the pointer of a rejection at acceptance or None when the
# verdict comes later, from the compile)
BAD = [
    ("a 3.2 MB source", sub(source="//" + "x" * 3_200_000 + "\n" + RELU), "/source"),
    ("an unknown buffer", sub(the_plan=plan(args=["x", "no_such_buffer", {"type": "u64", "value": "B * D"}])),
     "/plan/0/args/1"),
    ("an expression syntax error", sub(the_plan=plan(grid=["ceil_div(B * D, "])), "/plan/0/grid/0"),
    ("an unknown parameter", sub(the_plan=plan(grid=["Q * 2"])), "/plan/0/grid/0"),
    ("block 2048", sub(the_plan=plan(block=[2048])), "/plan/0/block/0"),
    ("shared 300000", sub(the_plan=plan(shared="300000")), "/plan/0/shared"),
    ("grid 0", sub(the_plan=plan(grid=["0"])), "/plan/0/grid/0"),
    ("an empty plan", sub(the_plan=[]), "/plan"),
    ("an unknown plan key", sub(the_plan=plan(colour="red")), "/plan/0/colour"),
    ("arg type f16", sub(the_plan=plan(args=["x", "y", {"type": "f16", "value": "B * D"}])), "/plan/0/args/2/type"),
    ("a source that is not a string", sub(source=42), "/source"),
    ("an empty source", sub(source=""), "/source"),
    ("a forbidden option", sub(options=["-I/etc"]), "/options/0"),
    ("options not a list", sub(options="-O3"), "/options"),
    ("no extern C", sub(source=unique(NO_EXTERN_C)), None),
    ("a misspelt kernel name", sub(the_plan=plan(kernel="rleu")), None),
    ("a wrong signature", sub(source=unique(FOUR_ARGS)), None),
]


def test_batch_of_50(server):
    rid = run_id()
    goods = [sub(tags={"run_id": rid, "step": 7, "sample": i, "temperature": 0.7,
                       "policy_version": "ckpt-12", "labels": {"k": 4}}) for i in range(20)]
    bads = []
    for i in range(30):
        what, s, ptr = BAD[i % len(BAD)]
        s = dict(s)
        if isinstance(s["source"], str) and s["source"]:
            s["source"] = unique(s["source"])   # no compile-cache hit between the two rounds
        s["tags"] = {"run_id": rid, "step": 7, "sample": 20 + i, "labels": {"what": what}}
        bads.append((what, s, ptr))
    batch = goods + [s for _, s, _ in bads]

    with kevald.Client(server.url) as c:
        r = c._request("POST", "/v1/submissions", body={"submissions": batch}, idem_key=run_id(), ok=(202,))
        ans = r.json()
        assert ans["count"] == 50 and len(ans["ids"]) == 50, ans
        at_acceptance = [20 + i for i, (_, _, ptr) in enumerate(bads) if ptr]
        assert ans["rejected"] == at_acceptance, ans["rejected"]
        c.wait_all(ans["ids"], timeout=300)

        # One history call (one page): every row, each with its result.
        items = list(c.history(run_id=rid, step=7))
        assert len(items) == 50 and {x.id for x in items} == set(ans["ids"])
        by_id = {x.id: x for x in items}
        rewards = kevald.reward.rewards(items, penalties={"rejected": -1.0, "compile_error": -0.5})
        assert all(x is not None for x in rewards), rewards
        assert len(rewards) == 50

        for i, sid in enumerate(ans["ids"][:20]):
            x = by_id[sid]
            assert x.verdict == "compiled", (x.verdict, x.feedback)
            assert x.tags["temperature"] == 0.7 and x.tags["policy_version"] == "ckpt-12"
            assert kevald.reward.reward(x) == 0.0
        for (what, _, ptr), sid in zip(bads, ans["ids"][20:]):
            x = by_id[sid]
            assert x.verdict == "rejected", (what, x.verdict, x.feedback)
            assert kevald.reward.reward(x, penalties={"rejected": -1.0}) == -1.0
            if ptr:
                assert x.result.raw["error"]["kind"] == "submission", (what, x.result.raw["error"])
                assert x.result.raw["error"]["pointer"] == ptr, (what, x.result.raw["error"])
            assert x.feedback.startswith("Rejected: "), (what, x.feedback)

        # The dashboard counts every sample of the step, the rejected ones included.
        run = c._request("GET", "/v1/dashboard/run", params={"id": rid}).json()
        step = [x for x in run["steps"] if x["step"] == 7]
        assert len(step) == 1 and sum(step[0]["verdicts"].values()) == 50, step
        assert step[0]["verdicts"].get("rejected") == 30 and step[0]["verdicts"].get("compiled") == 20, step

        # The new filters: step (nothing at step 8), a numeric label.
        assert list(c.history(run_id=rid, step=8)) == []
        assert len(list(c.history(run_id=rid, label={"k": 4}))) == 20
        assert len(list(c.history(run_id=rid, label={"k": "4"}))) == 20
        # A lighter listing has no results, and reward() says so instead of a silent None.
        light = list(c.history(run_id=rid, include_result=False, limit=1))
        try:
            kevald.reward.reward(light[0])
        except ValueError as e:
            assert "include_result" in str(e)
        else:
            raise AssertionError("reward() of a done item without its result must raise")


def test_rejected_single_answers_at_once(server):
    with kevald.Client(server.url) as c:
        s = sub(the_plan=plan(block=[2048]))
        r = c._request("POST", "/v1/submissions", body=s, ok=(202,))
        assert r.json()["state"] == "done" and r.json()["verdict"] == "rejected"
        # With ?wait the whole object, at once.
        x = c.evaluate(sub(the_plan=plan(block=[2048])), timeout=30)
        assert x.verdict == "rejected" and x.result.raw["error"]["pointer"] == "/plan/0/block/0"
