"""
Submissions: accept (single, batch, ?wait), read (by id, long-poll), cancel,
and Idempotency-Key replays, against a real server without a GPU.
"""
import time
import uuid

from conftest import (SLOW, accepted, compile_sub, full_sub, list_all, problem, unique,
                      wait_done, GOOD_KERNEL)


def test_single_accepted_then_compiled(client):
    r = client.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL)))
    sid = accepted(r)
    g = client.get(f"/v1/submissions/{sid}")
    assert g.status_code == 200
    assert g.headers["content-type"].startswith("application/json")
    body = g.json()
    assert body["id"] == sid and body["mode"] == "compile"
    assert body["state"] in ("queued", "compiling", "compiled", "done")
    done = wait_done(client, sid)
    assert done["verdict"] == "compiled", done


def test_batch_accepted_in_order(client):
    run = uuid.uuid4().hex
    subs = [compile_sub(unique(GOOD_KERNEL), tags={"run_id": run, "sample": i}) for i in range(7)]
    r = client.post("/v1/submissions", json={"submissions": subs})
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["count"] == 7 and len(body["ids"]) == 7
    assert len(set(body["ids"])) == 7
    assert body["ids"] == sorted(body["ids"]), "ids are given in request order"
    for i, sid in enumerate(body["ids"]):
        g = client.get(f"/v1/submissions/{sid}").json()
        assert g["tags"]["sample"] == i and g["tags"]["run_id"] == run


def test_batch_all_or_nothing(client):
    run = uuid.uuid4().hex
    subs = [compile_sub(unique(GOOD_KERNEL), tags={"run_id": run}) for _ in range(3)]
    subs[2]["bogus"] = 1
    body = problem(client.post("/v1/submissions", json={"submissions": subs}), 422)
    assert body["pointer"] == "/submissions/2/bogus", body
    assert list_all(client, run_id=run) == [], "nothing of a failed batch is stored"


def test_batch_over_limit(make_server):
    s = make_server("--batch-limit", "5")
    with s.client() as c:
        subs = [compile_sub(GOOD_KERNEL) for _ in range(6)]
        body = problem(c.post("/v1/submissions", json={"submissions": subs}), 422)
        assert body["pointer"] == "/submissions", body
        r = c.post("/v1/submissions", json={"submissions": subs[:5]})
        assert r.status_code == 202 and r.json()["count"] == 5, r.text


def test_empty_batch(client):
    body = problem(client.post("/v1/submissions", json={"submissions": []}), 422)
    assert body["pointer"] == "/submissions", body


def test_wait_returns_done_object(client):
    # Warm the compile cache and the worker first, so the timing below is the API's.
    wait_done(client, accepted(client.post("/v1/submissions", json=compile_sub())))
    t0 = time.monotonic()
    r = client.post("/v1/submissions", params={"wait": 20}, json=compile_sub())
    elapsed = time.monotonic() - t0
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["state"] == "done" and body["verdict"] == "compiled", body
    assert body["result"]["compile"]["cache_hit"] is True
    assert elapsed < 5 * SLOW, f"?wait answered after {elapsed:.2f}s, not when done"


def test_wait_times_out_with_202(client):
    sub = full_sub(client)   # built first: it may read the task library
    t0 = time.monotonic()
    r = client.post("/v1/submissions", params={"wait": 1}, json=sub)
    elapsed = time.monotonic() - t0
    sid = accepted(r)
    assert 0.8 <= elapsed < 1 + 3 * SLOW, elapsed
    assert client.get(f"/v1/submissions/{sid}").json()["state"] != "done"


def test_get_unknown_and_non_numeric(client):
    problem(client.get("/v1/submissions/999999999"), 404)
    for bad in ("abc", "12abc", "-1", "0x10", "1.5"):
        r = client.get(f"/v1/submissions/{bad}")
        assert r.status_code in (404, 422), (bad, r.status_code, r.text)
        problem(r)


def test_get_wait_returns_when_done(client):
    sid = accepted(client.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL))))
    t0 = time.monotonic()
    r = client.get(f"/v1/submissions/{sid}", params={"wait": 30})
    elapsed = time.monotonic() - t0
    assert r.status_code == 200
    assert r.json()["state"] == "done", r.text
    assert elapsed < 10 * SLOW, f"long-poll held {elapsed:.2f}s for a ~0.1 s compile"
    # Already done: answered at once.
    t0 = time.monotonic()
    r = client.get(f"/v1/submissions/{sid}", params={"wait": 30})
    assert r.json()["state"] == "done" and time.monotonic() - t0 < 1.0 * SLOW


def test_get_wait_expires_when_never_done(client):
    sid = accepted(client.post("/v1/submissions", json=full_sub(client)))
    t0 = time.monotonic()
    r = client.get(f"/v1/submissions/{sid}", params={"wait": 2})
    elapsed = time.monotonic() - t0
    assert r.status_code == 200, r.text
    assert r.json()["state"] != "done"
    assert 1.8 <= elapsed < 2 + 3 * SLOW, f"wait=2 answered after {elapsed:.2f}s"


def test_wait_bounds(client):
    sid = accepted(client.post("/v1/submissions", json=full_sub(client)))
    for bad in ("601", "-1", "abc", "nan"):
        body = problem(client.get(f"/v1/submissions/{sid}", params={"wait": bad}), 422)
        assert body.get("pointer") == "/query/wait", body


def test_cancel_queued_then_conflict(client):
    # One compile worker and a backlog of distinct sources: the last one is
    # still queued when the DELETE arrives.
    subs = [compile_sub(unique(GOOD_KERNEL)) for _ in range(40)]
    r = client.post("/v1/submissions", json={"submissions": subs})
    assert r.status_code == 202, r.text
    ids = r.json()["ids"]
    last = ids[-1]
    d = client.delete(f"/v1/submissions/{last}")
    assert d.status_code == 200, d.text
    body = d.json()
    assert body["id"] == last and body["state"] == "done" and body["verdict"] == "cancelled", body
    # A second cancel, and a cancel of a finished job: 409.
    problem(client.delete(f"/v1/submissions/{last}"), 409)
    first = wait_done(client, ids[0])
    assert first["verdict"] == "compiled"
    problem(client.delete(f"/v1/submissions/{ids[0]}"), 409)
    # The cancelled one never compiles, even after the backlog drains.
    wait_done(client, ids[-2], timeout=120)
    g = client.get(f"/v1/submissions/{last}").json()
    assert g["verdict"] == "cancelled", g
    problem(client.delete("/v1/submissions/999999999"), 404)


def test_cancel_compiled_full_job(client):
    # Full mode without a GPU: compiles, then waits in state compiled forever; it can be cancelled
    # (once: a done one is 409).
    sid = accepted(client.post("/v1/submissions", json=full_sub(client)))
    deadline = time.monotonic() + 60 * SLOW
    state = None
    while time.monotonic() < deadline:
        state = client.get(f"/v1/submissions/{sid}").json()["state"]
        if state == "compiled":
            break
        time.sleep(0.05)
    assert state == "compiled", state
    r = client.delete(f"/v1/submissions/{sid}")
    assert r.status_code == 200 and r.json()["verdict"] == "cancelled", r.text
    assert client.get(f"/v1/submissions/{sid}").json()["state"] == "done"
    body = problem(client.delete(f"/v1/submissions/{sid}"), 409)
    assert "is done" in body["detail"], body


def test_idempotency_key(client):
    run = uuid.uuid4().hex
    key = uuid.uuid4().hex
    sub = compile_sub(unique(GOOD_KERNEL), tags={"run_id": run})
    a = accepted(client.post("/v1/submissions", json=sub, headers={"Idempotency-Key": key}))
    r = client.post("/v1/submissions", json=sub, headers={"Idempotency-Key": key})
    assert r.status_code in (200, 202), r.text
    assert r.json()["id"] == a
    assert [x["id"] for x in list_all(client, run_id=run)] == [a], "a replay inserts nothing"
    other = dict(sub, source=unique(GOOD_KERNEL))
    body = problem(client.post("/v1/submissions", json=other, headers={"Idempotency-Key": key}), 422)
    assert "dempoten" in (body.get("detail", "") + body["type"] + body["title"]), body
    assert len(list_all(client, run_id=run)) == 1

    # Batch replay: the same ids in the same order.
    bkey = uuid.uuid4().hex
    batch = {"submissions": [compile_sub(unique(GOOD_KERNEL), tags={"run_id": run}) for _ in range(4)]}
    r1 = client.post("/v1/submissions", json=batch, headers={"Idempotency-Key": bkey})
    r2 = client.post("/v1/submissions", json=batch, headers={"Idempotency-Key": bkey})
    assert r1.status_code == 202 and r2.status_code in (200, 202), (r1.text, r2.text)
    assert r1.json()["ids"] == r2.json()["ids"]
    assert len(list_all(client, run_id=run)) == 5

    # Without a key, the same body is a new submission.
    accepted(client.post("/v1/submissions", json=sub))
    assert len(list_all(client, run_id=run)) == 6


def test_idempotency_key_too_long(client):
    body = problem(client.post("/v1/submissions", json=compile_sub(),
                               headers={"Idempotency-Key": "k" * 256}))
    assert body["status"] in (400, 422)
    assert body.get("pointer") == "/headers/Idempotency-Key", body


def test_interactive_priority_jumps_the_queue(client):
    # A backlog of bulk compiles on the single compile worker, then one
    # interactive submission: it is claimed ahead of the queued bulk ones.
    bulk = client.post("/v1/submissions",
                       json={"submissions": [compile_sub(unique(GOOD_KERNEL)) for _ in range(40)]})
    assert bulk.status_code == 202, bulk.text
    bulk_ids = bulk.json()["ids"]
    hot = accepted(client.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL), priority="interactive")))
    done = wait_done(client, hot, timeout=120)
    assert done["priority"] == "interactive" and done["verdict"] == "compiled"
    still_waiting = [i for i in bulk_ids if client.get(f"/v1/submissions/{i}").json()["state"] != "done"]
    assert len(still_waiting) >= 10, \
        f"interactive finished after {40 - len(still_waiting)} of 40 earlier bulk jobs: not prioritized"
    wait_done(client, bulk_ids[-1], timeout=180)
