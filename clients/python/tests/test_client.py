"""The synchronous client against the real server, with both transports (httpx and urllib)."""
import io
import time

import pytest

import kevald
from conftest import BROKEN, GOOD, RELU, RELU_PLAN, SLOW, run_id, unique

BACKENDS = ["httpx", "urllib"] if kevald.HAVE_HTTPX else ["urllib"]


@pytest.fixture(params=BACKENDS)
def c(request, server):
    with kevald.Client(server.url, timeout=30 * SLOW, backend=request.param) as cl:
        yield cl


def test_compile_result_is_typed(c):
    sub = c.evaluate(source=unique(GOOD), mode="compile", timeout=60 * SLOW)
    assert isinstance(sub, kevald.Submission)
    assert sub.done and sub.state == "done" and sub.verdict == "compiled"
    res = sub.result
    assert isinstance(res, kevald.Result) and res.verdict == "compiled"
    assert isinstance(res.compile, kevald.CompileInfo) and res.compile.ok is True
    assert [k.name for k in res.compile.kernels] == ["saxpy"]
    k = res.compile.kernels[0]
    assert isinstance(k, kevald.KernelInfo) and isinstance(k.registers, int) and k.registers > 0
    assert [p["size"] for p in k.params] == [4, 8, 8, 4]
    assert res.compiled is True and res.correct is False and res.speedup is None
    assert res.correctness is None and res.timing is None
    # Unknown fields are kept: the raw dicts are the server's JSON.
    assert sub.raw["result"] is res.raw and "lowered_names" in res.compile.raw
    assert sub.id > 0 and sub.mode == "compile" and sub.created_at.endswith("Z")


def test_compile_error_first_error(c):
    sid = c.submit({"source": unique(BROKEN), "mode": "compile"})
    sub = c.wait(sid, timeout=60 * SLOW)
    assert sub.verdict == "compile_error"
    assert sub.result.compile.ok is False
    assert "undefined_name_xq" in sub.result.compile.first_error
    assert "error" in sub.result.compile.first_error
    assert sub.result.error.kind == "compile"
    assert "undefined_name_xq" in sub.feedback


def test_batch_keeps_order_and_splits(c):
    rid = run_id()
    subs = [{"source": unique(GOOD) if i % 3 else unique(BROKEN), "mode": "compile",
             "tags": {"run_id": rid, "sample": i}} for i in range(8)]
    ids = c.submit_batch(subs, batch_size=3)
    assert len(ids) == 8 and len(set(ids)) == 8
    done = c.wait_all(ids, timeout=120 * SLOW)
    assert [s.id for s in done] == ids
    assert [s.tags["sample"] for s in done] == list(range(8))
    assert [s.verdict for s in done] == ["compile_error" if i % 3 == 0 else "compiled" for i in range(8)]
    # Three POSTs of 3, 3, 2: the ids of one batch are consecutive.
    assert ids[1] == ids[0] + 1 and ids[2] == ids[1] + 1


def test_batch_limit_detected(make_server):
    s = make_server("--batch-limit", "4")
    with kevald.Client(s.url) as cl:
        rid = run_id()
        ids = cl.submit_batch([{"source": unique(GOOD), "mode": "compile", "tags": {"run_id": rid, "sample": i}}
                               for i in range(10)])
        assert len(ids) == 10
        got = sorted(cl.history(run_id=rid), key=lambda x: x.id)
        assert [x.tags["sample"] for x in got] == list(range(10))
        assert [x.id for x in got] == ids


def test_errors_carry_problem(c):
    with pytest.raises(kevald.ValidationError) as e:
        c.submit(source="x", mode="bogus")
    assert e.value.status == 422 and e.value.pointer == "/mode" and e.value.title
    with pytest.raises(kevald.ValidationError) as e:
        c.submit(source=RELU, task="no_such_task_xyz", plan=RELU_PLAN)
    assert e.value.pointer == "/task"
    with pytest.raises(kevald.NotFound) as e:
        c.get(987654321)
    assert e.value.status == 404
    with pytest.raises(kevald.NotFound):
        c.task("no_such_task_xyz")
    with pytest.raises(TypeError):
        c.submit(source="x", colour="red")
    done = c.evaluate(source=unique(GOOD), mode="compile", timeout=60 * SLOW)
    with pytest.raises(kevald.Conflict) as e:
        c.cancel(done.id)
    assert e.value.status == 409 and e.value.detail


def test_full_mode_waits_then_cancel(c):
    # No GPU here: full-mode submissions compile and then wait for a GPU.
    ids = c.submit_batch([{"source": unique(RELU), "task": "l1_19_relu", "plan": RELU_PLAN, "mode": "full"}
                          for _ in range(20)])
    last = ids[-1]
    try:
        cancelled = c.cancel(last)       # still queued: the dispatcher claims 8 at a time
    except kevald.Conflict:
        pytest.skip("the submission had left the queue already")
    assert cancelled.state == "done" and cancelled.verdict == "cancelled"
    assert kevald.reward.reward(cancelled) is None
    t0 = time.monotonic()
    sub = c.wait(ids[0], timeout=2)
    assert not sub.done and sub.state in ("queued", "compiling", "compiled")
    assert 1.9 <= time.monotonic() - t0 < 20 * SLOW
    assert c.get(last).verdict == "cancelled"


def test_history_pages_and_filters(c):
    rid = run_id()
    ids = c.submit_batch([{"source": unique(GOOD), "mode": "compile", "tags": {"run_id": rid}}
                          for _ in range(5)])
    c.wait_all(ids, timeout=120 * SLOW)
    got = list(c.history(run_id=rid, page_size=2))
    assert sorted(x.id for x in got) == sorted(ids)
    assert [x.id for x in got] == sorted(ids, reverse=True)    # newest first
    assert len(list(c.history(run_id=rid, limit=3, page_size=2))) == 3
    assert [x.id for x in c.history(run_id=rid, verdict="compiled")] == sorted(ids, reverse=True)
    assert list(c.history(run_id=rid, verdict="correct")) == []
    assert len(list(c.history(run_id=rid, since=int(time.time()) - 3600))) == 5


def test_tasks(c):
    items = c.tasks(category="activation")
    assert items and all(t["category"] == "activation" for t in items)
    assert "l1_19_relu" in [t["name"] for t in items]
    assert all(t["level"] == 1 for t in c.tasks(level=1))
    t = c.task("l1_19_relu")
    assert t["name"] == "l1_19_relu" and "relu_ref" in t["reference"]["source"]
    p = c.task_prompt("l1_19_relu")
    assert isinstance(p, str) and "relu" in p.lower() and len(p) > 100
    st = c.stats()
    assert st["submissions"]["total"] >= 1 and "queue" in st


def test_wait_all_progress(server, capsys):
    with kevald.Client(server.url) as cl:
        ids = cl.submit_batch([{"source": unique(GOOD), "mode": "compile"} for _ in range(3)])
        stream = io.StringIO()
        bar = kevald.client._Progress(3, True, stream)
        for s in cl.wait_all(ids, timeout=60 * SLOW):
            bar.update(s)
        out = stream.getvalue()
        assert "3/3" in out and "compiled=3" in out
        cl.wait_all(ids, timeout=60 * SLOW, progress=True)
        err = capsys.readouterr().err
        assert "3/3" in err and "compiled=3" in err


def test_unreachable_raises_after_retries():
    with kevald.Client("http://127.0.0.1:9", retries=2, backoff=0.01) as cl:
        t0 = time.monotonic()
        with pytest.raises(kevald.KevaldConnectionError) as e:
            cl.stats()
        assert cl.retry_count == 2
        assert "127.0.0.1:9" in str(e.value)
        assert time.monotonic() - t0 < 10


def test_env_defaults(server, monkeypatch):
    monkeypatch.setenv("KEVALD_URL", server.url)
    with kevald.Client() as cl:
        assert cl.base_url == server.url
        assert cl.stats()["submissions"]["total"] >= 0
