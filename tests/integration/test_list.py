"""
Listing: filters (task, verdict, state, mode, run_id, label, since) and cursor
pagination, newest first, every row exactly once.
"""
import time
import uuid

from conftest import (accepted, compile_sub, full_sub, list_all, problem, unique, wait_done,
                      BROKEN_KERNEL, GOOD_KERNEL, library_task)


def test_pagination_newest_first(client):
    run = uuid.uuid4().hex
    subs = [compile_sub(GOOD_KERNEL, tags={"run_id": run, "sample": i,
                                            "labels": {"parity": "even" if i % 2 == 0 else "odd"}})
            for i in range(25)]
    ids = []
    for s in subs[:5]:     # some single, some batched
        ids.append(accepted(client.post("/v1/submissions", json=s)))
    r = client.post("/v1/submissions", json={"submissions": subs[5:]})
    assert r.status_code == 202, r.text
    ids += r.json()["ids"]
    assert len(set(ids)) == 25

    seen = []
    pages = 0
    cursor = None
    while True:
        params = {"run_id": run, "limit": 10}
        if cursor is not None:
            params["cursor"] = cursor
        r = client.get("/v1/submissions", params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        pages += 1
        assert len(body["items"]) <= 10
        seen += [it["id"] for it in body["items"]]
        for it in body["items"]:
            assert "result" not in it, "list items carry no result"
            assert it["tags"]["run_id"] == run
        cursor = body["next_cursor"]
        if cursor is None:
            break
        assert pages < 10
    assert pages == 3, pages
    assert sorted(seen) == sorted(ids), "every id exactly once"
    assert len(seen) == len(set(seen))
    assert seen == sorted(ids, reverse=True), "newest first"

    even = [it["id"] for it in list_all(client, run_id=run, label="parity=even")]
    assert sorted(even) == sorted(ids[0::2]), even
    assert list_all(client, run_id=run, label="parity=none") == []


def test_filters(client):
    run = uuid.uuid4().hex
    good = accepted(client.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL), tags={"run_id": run})))
    bad = accepted(client.post("/v1/submissions", json=compile_sub(unique(BROKEN_KERNEL), tags={"run_id": run})))
    full = accepted(client.post("/v1/submissions", json=full_sub(client, tags={"run_id": run})))
    assert wait_done(client, good)["verdict"] == "compiled"
    assert wait_done(client, bad)["verdict"] == "compile_error"

    def ids(**f):
        return sorted(it["id"] for it in list_all(client, run_id=run, **f))

    assert ids() == sorted([good, bad, full])
    assert ids(verdict="compiled") == [good]
    assert ids(verdict="compile_error") == [bad]
    assert ids(state="done") == sorted([good, bad])
    assert ids(state="done", verdict="compiled") == [good]
    lt = library_task(client)
    task_name = lt[0] if lt else "it_vecadd"
    assert ids(task=task_name) == [full]
    assert ids(task="no_such_task_xyz") == []

    other = uuid.uuid4().hex
    assert list_all(client, run_id=other) == []

    # since: only rows created at or after the time.
    created = client.get(f"/v1/submissions/{full}").json()["created_at"]
    time.sleep(0.05)
    later = accepted(client.post("/v1/submissions", json=compile_sub(GOOD_KERNEL, tags={"run_id": run})))
    assert ids(since=created) == sorted([full, later])
    assert ids(since=time.time() + 3600) == []


def test_bad_query_parameters(client):
    for params, name in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"), ({"limit": "x"}, "limit"),
                         ({"cursor": "abc"}, "cursor"), ({"state": "sleeping"}, "state"),
                         ({"verdict": "great"}, "verdict"), ({"since": "yesterday"}, "since"),
                         ({"label": "novalue"}, "label"), ({"colour": "red"}, "colour")):
        body = problem(client.get("/v1/submissions", params=params), 422)
        assert body.get("pointer") == f"/query/{name}", (params, body)


def test_limit_max_page(client):
    r = client.get("/v1/submissions", params={"limit": 1000})
    assert r.status_code == 200
    assert len(r.json()["items"]) <= 1000
