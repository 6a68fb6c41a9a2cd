"""
Triton kernels on the real server, without Triton or a GPU (issue 28): PTX in
the shape Triton emits (the user's parameters, then the global_scratch and
profile_scratch pointers) compiled by the real compile worker (nvJitLink)
and its plan checked against the CUBIN's parameters in mode "compile"; the
plan built by the Python client (kevald.triton) from the fixture's
metadata, so a fixture Triton produced on the GPU host is tested the same
way; the submission's "frontend"; the Triton prompt.

Fixtures: tests/fixtures/triton/*.json, each naming its PTX, task, kernel
arguments, grid and Triton metadata (README.md there).
"""
import inspect
import json
import re
import runpy
import sys
import types
import uuid

import pytest

from conftest import SOURCE_ROOT, accepted, list_all, problem, wait_done

sys.path.insert(0, str(SOURCE_ROOT / "clients" / "python"))
from kevald import triton as kt  # noqa: E402

FIXTURES = SOURCE_ROOT / "tests" / "fixtures" / "triton"
FIXTURE_FILES = sorted(FIXTURES.glob("*.json"))


def load_fixture(path):
    fx = json.loads(path.read_text())
    fx["ptx_text"] = (FIXTURES / fx["ptx"]).read_text()
    return fx


def fixture_submission(client, fx, metadata=None, **extra):
    """The submission kevald.triton builds for fixture @fx (its compile replaced by the fixture's PTX)."""
    task = client.get(f"/v1/tasks/{fx['task']}").json()
    md = dict(fx["metadata"], **(metadata or {}))
    bufs = {b["name"]: b["dtype"] for b in task["buffers"]}
    _, plan_args = kt.bind_args(fx["arg_names"], fx["args"], fx["constexprs"], bufs)
    plan, scratch = kt.plan_for(fx["ptx_text"], md, plan_args, kt.grid_exprs(fx["grid"]), (), fx["num_warps"])
    # a comment line keeps the compile cache from answering for an earlier test
    sub = {"task": fx["task"], "language": "ptx", "frontend": f"triton {fx['triton']}", "mode": "compile",
           "source": f"// {uuid.uuid4().hex}\n" + fx["ptx_text"], "plan": plan}
    if scratch:
        sub["scratch"] = scratch
    sub.update(extra)
    return sub


def test_fixtures_exist():
    assert FIXTURE_FILES, f"no Triton fixtures in {FIXTURES}"


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.stem for p in FIXTURE_FILES])
def test_fixture_compiles_and_passes_the_plan_check(client, path):
    fx = load_fixture(path)
    sub = fixture_submission(client, fx)
    done = wait_done(client, accepted(client.post("/v1/submissions", json=sub)))
    assert done["verdict"] == "compiled", done
    res = done["result"]
    assert res["frontend"] == f"triton {fx['triton']}"
    kernels = {k["name"]: k for k in res["compile"]["kernels"]}
    k = kernels[fx["metadata"]["name"]]
    # every argument of the plan has a parameter of its size; the scratch pointers are there
    args = sub["plan"][0]["args"]
    assert len(k["params"]) == len(args)
    assert [p["size"] for p in k["params"][-2:]] == [8, 8]


def test_scratch_pointer_and_null_in_the_plan(client):
    fx = load_fixture(FIXTURES / "relu_handwritten.json")
    sub = fixture_submission(client, fx, metadata={"global_scratch_size": 64, "global_scratch_align": 16})
    assert sub["plan"][0]["args"][-2:] == ["triton_global_scratch", None]
    assert sub["scratch"] == [{"name": "triton_global_scratch", "dtype": "u8",
                               "count": "(ceil_div(B * D, 128)) * 64"}]
    done = wait_done(client, accepted(client.post("/v1/submissions", json=sub)))
    assert done["verdict"] == "compiled", done


def test_missing_scratch_pointer_is_rejected_by_the_plan_check(client):
    """A plan for a Triton without profile_scratch against PTX that has it: rejected, not run."""
    fx = load_fixture(FIXTURES / "relu_handwritten.json")
    sub = fixture_submission(client, fx)
    sub["plan"][0]["args"].pop()
    done = wait_done(client, accepted(client.post("/v1/submissions", json=sub)))
    assert done["verdict"] == "rejected", done
    err = done["result"]["error"]
    assert err["kind"] == "plan"
    assert "4 arguments given, but the kernel has 5 parameters" in err["message"], err
    assert done["result"]["frontend"] == "triton 3.6.0"
    # a null where the kernel takes the 4-byte n is named as a null pointer
    sub = fixture_submission(client, fx)
    sub["plan"][0]["args"][2] = None
    done = wait_done(client, accepted(client.post("/v1/submissions", json=sub)))
    assert done["verdict"] == "rejected", done
    assert "argument 2 is a null pointer (8 bytes) but the kernel's parameter 2 is 4 bytes" in \
        done["result"]["error"]["message"]


def test_frontend_in_history_and_in_the_stored_request(client):
    fx = load_fixture(FIXTURES / "relu_handwritten.json")
    run = uuid.uuid4().hex
    sid = accepted(client.post("/v1/submissions", json=fixture_submission(client, fx, tags={"run_id": run})))
    wait_done(client, sid)
    items = list_all(client, run_id=run, include="result")
    assert [i["id"] for i in items] == [sid]
    assert items[0]["result"]["frontend"] == "triton 3.6.0"
    d = client.get(f"/v1/dashboard/submissions/{sid}")
    assert d.status_code == 200, d.text
    assert d.json()["request"]["frontend"] == "triton 3.6.0"
    assert d.json()["request"]["language"] == "ptx"
    # a plain CUDA submission's result has no frontend
    cuda = {"mode": "compile", "source": f"// {uuid.uuid4().hex}\nextern \"C\" __global__ void k(float *x) {{}}\n"}
    done = wait_done(client, accepted(client.post("/v1/submissions", json=cuda)))
    assert done["verdict"] == "compiled" and "frontend" not in done["result"]


def test_frontend_rejected_at_acceptance_keeps_it(client):
    """A candidate fault (here: an unknown buffer) is stored as rejected; its result names the frontend."""
    fx = load_fixture(FIXTURES / "relu_handwritten.json")
    sub = fixture_submission(client, fx)
    sub["plan"][0]["args"][0] = "no_such_buffer"
    r = client.post("/v1/submissions", json=sub)
    assert r.status_code == 202 and r.json()["verdict"] == "rejected", r.text
    done = wait_done(client, r.json()["id"])
    assert done["verdict"] == "rejected" and done["result"]["error"]["kind"] == "submission", done
    assert done["result"]["frontend"] == "triton 3.6.0"


@pytest.mark.parametrize("change, pointer, words", [
    ({"language": "cuda"}, "/frontend", "needs \"language\": \"ptx\""),
    ({"frontend": ""}, "/frontend", "empty"),
    ({"frontend": "triton\n3.6"}, "/frontend", "letters, digits"),
    ({"frontend": "t" * 65}, "/frontend", "the limit is 64"),
    ({"frontend": 3}, "/frontend", "must be a string"),
])
def test_bad_frontend_is_422(client, change, pointer, words):
    sub = {"mode": "compile", "language": "ptx", "frontend": "triton 3.6.0", "source": ".version 8.7\n"}
    sub.update(change)
    body = problem(client.post("/v1/submissions", json=sub), 422)
    assert body["pointer"] == pointer, body
    assert words in body["detail"], body


def test_triton_prompt(client):
    r = client.get("/v1/tasks/l1_19_relu/prompt", params={"language": "triton"})
    assert r.status_code == 200, r.text
    text = r.text
    assert "Write a Triton kernel (one `@triton.jit` function, launched once) that computes:" in text
    assert "kevald.triton.evaluate(client, kernel, task=\"l1_19_relu\"" in text
    assert "x -> *fp32, y -> *fp32" in text
    assert "Example of the elementwise pattern" in text and "@triton.jit" in text
    assert "extern \"C\"" not in text, "the CUDA contract is not in the Triton prompt"
    # the family follows the task's category
    for task, family, code in [("l1_23_softmax", "softmax-like", "tl.max(m, axis=0)"),
                               ("l1_1_square_matrix_multiplication", "matmul (tl.dot)", "tl.dot(a, b, acc"),
                               ("l1_47_sum_reduction_over_a_dimension", "reduction", "acc += tl.load")]:
        t = client.get(f"/v1/tasks/{task}/prompt", params={"language": "triton"})
        assert t.status_code == 200 and f"Example of the {family} pattern" in t.text and code in t.text, task
    j = client.get("/v1/tasks/l1_19_relu/prompt", params={"language": "triton", "format": "json"}).json()
    assert j["language"] == "triton" and j["prompt"] == text
    cuda = client.get("/v1/tasks/l1_19_relu/prompt", params={"format": "json"}).json()
    assert cuda["language"] == "cuda" and "extern \"C\"" in cuda["prompt"]
    assert client.get("/v1/tasks/l1_19_relu/prompt", params={"language": "cuda"}).text == cuda["prompt"]


@pytest.mark.parametrize("lang", ["python", "", "TRITON"])
def test_bad_prompt_language_is_422(client, lang):
    body = problem(client.get("/v1/tasks/l1_19_relu/prompt", params={"language": lang}), 422)
    assert body["pointer"] == "/query/language", body


# ---- the prompts' examples bind to their tasks -----------------------------------------------

PTX_SCALARS = {"i32": "u32", "u32": "u32", "i64": "u64", "u64": "u64", "fp32": "f32", "fp64": "f64"}


def triton_shaped_ptx(name, signature):
    """An empty kernel with the parameters Triton 3.6 would give @signature (two scratch pointers last)."""
    params = ["u64 .ptr .global .align 1" if t.startswith("*") else PTX_SCALARS[t]
              for t in signature.values() if t != "constexpr"] + ["u64 .ptr .global .align 1"] * 2
    decl = ",\n".join(f"\t.param .{p} {name}_param_{i}" for i, p in enumerate(params))
    return f".version 8.7\n.target sm_90a\n.address_size 64\n\n.visible .entry {name}(\n{decl}\n)\n{{\n\tret;\n}}\n"


def fake_triton():
    """Just enough of Triton for an example to be imported: @triton.jit records the parameter names."""
    triton = types.ModuleType("triton")
    lang = types.ModuleType("triton.language")
    lang.constexpr = type("constexpr", (), {})

    def jit(fn):
        return types.SimpleNamespace(fn=fn, __name__=fn.__name__, cache_key=fn.__name__,
                                     arg_names=list(inspect.signature(fn).parameters))
    triton.jit, triton.language, triton.__version__ = jit, lang, "3.6.0"
    return {"triton": triton, "triton.language": lang}


def fake_compiler(fn, signature, constexprs, attrs, cc, options):
    md = {"name": fn.__name__, "num_warps": options["num_warps"], "num_ctas": 1, "shared": 0,
          "global_scratch_size": 0, "global_scratch_align": 1, "profile_scratch_size": 0, "profile_scratch_align": 1}
    return triton_shaped_ptx(fn.__name__, signature), md, "3.6.0"


@pytest.mark.parametrize("task", ["l1_19_relu", "l1_47_sum_reduction_over_a_dimension", "l1_23_softmax",
                                  "l1_1_square_matrix_multiplication"])
def test_prompt_example_binds_to_its_task(client, server, task, tmp_path, monkeypatch):
    """
    Each family example, run as a user would (with a stand-in for Triton that
    compiles nothing): its args name every kernel parameter and only the
    task's buffers, its grid and scalars are valid expressions for every shape
    set, and the plan kevald.triton builds passes the server's plan check. Its
    numerics are for the GPU host (tests/fixtures/triton/generate.py --evaluate).
    """
    text = client.get(f"/v1/tasks/{task}/prompt", params={"language": "triton"}).text
    code = re.search(r"```python\n(.*?)```", text[text.index("## Example"):], re.S).group(1)
    assert f'task="{task}"' in code
    seen = []

    def evaluate(c, fn, task, grid, args, arch=None, timeout=600.0, **kw):
        sub, _ = kt.build(fn, c.task(task), grid, args, arch="sm_90a", compiler=fake_compiler,
                          cache=kt.PtxCache(), version="3.6.0", mode="compile", **kw)
        sub["source"] = f"// {uuid.uuid4().hex}\n" + sub["source"]
        seen.append(c.evaluate(sub, timeout=60))
        return seen[-1]

    for name, mod in fake_triton().items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(kt, "evaluate", evaluate)
    monkeypatch.setenv("KEVALD_URL", server.url)
    path = tmp_path / "example.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="__example__")
    assert len(seen) == 1
    assert seen[0].verdict == "compiled", seen[0].raw
    assert seen[0].result.frontend == "triton 3.6.0"
