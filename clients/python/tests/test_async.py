"""The asyncio client against the real server (httpx, and the thread fallback)."""
import asyncio

import pytest

import kevald
from conftest import BROKEN, GOOD, SLOW, run_id, unique

BACKENDS = ["httpx", "urllib"] if kevald.HAVE_HTTPX else ["urllib"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_surface(server, backend):
    rid = run_id()

    async def go():
        async with kevald.AsyncClient(server.url, backend=backend, timeout=30 * SLOW) as c:
            subs = [{"source": unique(BROKEN if i == 2 else GOOD), "mode": "compile",
                     "tags": {"run_id": rid, "sample": i}} for i in range(5)]
            ids = await c.submit_batch(subs, batch_size=2)
            done = await c.wait_all(ids, timeout=120 * SLOW)
            one = await c.evaluate(source=unique(GOOD), mode="compile", tags={"run_id": rid}, timeout=60 * SLOW)
            hist = [x async for x in c.history(run_id=rid, page_size=2)]
            tasks = await c.tasks(category="activation")
            prompt = await c.task_prompt("l1_19_relu")
            with pytest.raises(kevald.NotFound):
                await c.get(987654321)
            with pytest.raises(kevald.ValidationError) as e:
                await c.submit(source="x", mode="bogus")
            assert e.value.pointer == "/mode"
            got = await c.get(ids[0])
            return ids, done, one, hist, tasks, prompt, got

    ids, done, one, hist, tasks, prompt, got = asyncio.run(go())
    assert [s.id for s in done] == ids
    assert [s.verdict for s in done] == ["compiled", "compiled", "compile_error", "compiled", "compiled"]
    assert [s.tags["sample"] for s in done] == list(range(5))
    assert one.done and one.verdict == "compiled"
    assert sorted(x.id for x in hist) == sorted(ids + [one.id])
    assert any(t["name"] == "l1_19_relu" for t in tasks)
    assert "relu" in prompt.lower()
    assert got.done and got.result.compile.kernels[0].name == "saxpy"
