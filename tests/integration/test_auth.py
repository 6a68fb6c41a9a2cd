"""
Bearer tokens, per-token rate limits and quotas, and the global queue limit:
401, 429 and 503 with Retry-After, against dedicated servers.
"""
import time

from conftest import KEVALD, accepted, compile_sub, full_sub, inline_full_sub, problem

import subprocess


def token_create(db, name, *extra):
    p = subprocess.run([str(KEVALD), "token", "create", name, "--db", str(db), *extra],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"token create: {p.returncode} {p.stderr}"
    tok = p.stdout.strip().splitlines()[-1].strip()
    assert len(tok) >= 20 and " " not in tok, f"token create printed {p.stdout!r}"
    return tok


def token_revoke(db, name):
    p = subprocess.run([str(KEVALD), "token", "revoke", name, "--db", str(db)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"token revoke: {p.returncode} {p.stderr}"


def bearer(tok):
    return {"Authorization": f"Bearer {tok}"}


def test_auth(make_server, tmp_path):
    db = tmp_path / "auth.db"
    s = make_server("--auth", "on", "--auth-cache-s", "0", db=db)
    alice = token_create(s.db, "alice")
    bob = token_create(s.db, "bob")
    with s.client() as c:
        r = c.post("/v1/submissions", json=compile_sub())
        problem(r, 401)
        assert r.headers.get("www-authenticate", "").startswith("Bearer"), r.headers
        problem(c.get("/v1/submissions"), 401)
        problem(c.get("/v1/stats"), 401)
        problem(c.post("/v1/submissions", json=compile_sub(), headers=bearer("k" * 40)), 401)
        problem(c.post("/v1/submissions", json=compile_sub(), headers={"Authorization": "Basic eDp5"}), 401)
        # Health and metrics stay open.
        assert c.get("/livez").status_code == 200
        assert c.get("/readyz").status_code == 200
        assert c.get("/metrics").status_code == 200

        a_id = accepted(c.post("/v1/submissions", json=compile_sub(), headers=bearer(alice)))
        assert c.get(f"/v1/submissions/{a_id}", headers=bearer(alice)).status_code == 200
        # A token sees its own submissions only.
        assert c.get(f"/v1/submissions/{a_id}", headers=bearer(bob)).status_code == 404
        listed = c.get("/v1/submissions", headers=bearer(bob)).json()["items"]
        assert a_id not in [x["id"] for x in listed]
        assert a_id in [x["id"] for x in c.get("/v1/submissions", headers=bearer(alice)).json()["items"]]

        token_revoke(s.db, "alice")
        time.sleep(0.1)
        problem(c.post("/v1/submissions", json=compile_sub(), headers=bearer(alice)), 401)
        accepted(c.post("/v1/submissions", json=compile_sub(), headers=bearer(bob)))


def test_auth_default_off_on_loopback(client):
    assert client.post("/v1/submissions", json=compile_sub()).status_code == 202


def test_rate_limit(make_server, tmp_path):
    # 0.2 tokens/s: the bucket cannot refill between three quick requests
    # even on a loaded machine, so the third is refused deterministically.
    db = tmp_path / "rate.db"
    s = make_server("--auth", "on", "--rate", "0.2", "--burst", "2", db=db)
    tok = token_create(s.db, "fast")
    other = token_create(s.db, "other")
    with s.client() as c:
        codes = []
        last = None
        for _ in range(3):
            last = c.get("/v1/submissions", headers=bearer(tok))
            codes.append(last.status_code)
        assert codes == [200, 200, 429], codes
        body = problem(last, 429)
        ra = last.headers.get("retry-after")
        assert ra is not None and ra.isdigit() and 1 <= int(ra) <= 5, last.headers
        assert "rate" in (body["type"] + body["title"] + body.get("detail", "")).lower()
        # POSTs draw from the same bucket.
        problem(c.post("/v1/submissions", json=compile_sub(), headers=bearer(tok)), 429)
        # Per token: another token is not limited by the first one's use.
        assert c.get("/v1/submissions", headers=bearer(other)).status_code == 200
        # After Retry-After seconds the bucket has a token again.
        time.sleep(int(ra) + 0.2)
        assert c.get("/v1/submissions", headers=bearer(tok)).status_code == 200


def test_per_token_quota(make_server, tmp_path):
    db = tmp_path / "quota.db"
    s = make_server("--auth", "on", "--max-queued-per-token", "3", db=db)
    tok = token_create(s.db, "q")
    other = token_create(s.db, "q2")
    with s.client() as c:
        # Full-mode jobs never finish here (no GPU), so they count against the quota.
        for _ in range(3):
            accepted(c.post("/v1/submissions", json=inline_full_sub(), headers=bearer(tok)))
        r = c.post("/v1/submissions", json=inline_full_sub(), headers=bearer(tok))
        body = problem(r, 429)
        assert r.headers.get("retry-after", "").isdigit(), r.headers
        assert "quota" in (body["type"] + body["title"] + body.get("detail", "")).lower(), body
        # A batch that would cross it is refused whole.
        problem(c.post("/v1/submissions", json={"submissions": [inline_full_sub()] * 4},
                       headers=bearer(other)), 429)
        accepted(c.post("/v1/submissions", json=inline_full_sub(), headers=bearer(other)))
        # Cancelling frees a slot... only while queued; the jobs are compiled by now or
        # soon, so just check the quota still holds.
        problem(c.post("/v1/submissions", json=inline_full_sub(), headers=bearer(tok)), 429)


def test_queue_full(make_server):
    s = make_server("--max-queued", "5")
    with s.client() as c:
        for _ in range(5):
            accepted(c.post("/v1/submissions", json=full_sub(c)))
        r = c.post("/v1/submissions", json=full_sub(c))
        problem(r, 503)
        assert r.headers.get("retry-after", "").isdigit(), r.headers
        # Reads still work while the queue is full.
        assert c.get("/v1/submissions").status_code == 200


def test_token_create_without_db_creates_nothing(tmp_path):
    """Without --db and no store at the default path, refuse: a token in a new empty file opens nothing."""
    p = subprocess.run([str(KEVALD), "token", "create", "alice"], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert p.returncode == 2 and "give --db" in p.stderr, (p.returncode, p.stderr)
    assert list(tmp_path.iterdir()) == [], "nothing may be created"
    # Named on purpose, a new store is made, and said.
    p = subprocess.run([str(KEVALD), "token", "create", "alice", "--db", str(tmp_path / "new.db")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "creating a new, empty store" in p.stderr, (p.returncode, p.stderr)
