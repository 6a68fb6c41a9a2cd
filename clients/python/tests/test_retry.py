"""
Retries and idempotency against the real server: a token with a tiny rate
makes the server answer 429 (Retry-After); the clients back off, retry and
succeed, and every logical submission is stored exactly once. A lost answer
(the request reached the server, the reply did not reach the client) is
retried with the same Idempotency-Key and gives back the original id.
"""
import asyncio

import pytest

import kevald
from kevald import _transport
from conftest import GOOD, SLOW, run_id, token_create, unique


@pytest.fixture
def limited(make_server, tmp_path):
    db = tmp_path / "rate.db"
    s = make_server("--auth", "on", "--auth-cache-s", "0", db=db)
    tok = token_create(db, "slow", "--rate", "2", "--burst", "2")
    admin = token_create(db, "admin", "--admin")
    return s, tok, admin


def _count_rows(url, admin, rid):
    with kevald.Client(url, token=admin) as c:
        return [x.id for x in c.history(run_id=rid)]


def test_sync_retries_429_without_duplicates(limited):
    s, tok, admin = limited
    rid = run_id()
    with kevald.Client(s.url, token=tok, retries=20, backoff=0.05) as c:
        # Without retries the same burst is refused: the limit is real.
        with kevald.Client(s.url, token=tok, retries=0) as raw:
            with pytest.raises(kevald.RateLimited) as e:
                for _ in range(10):
                    raw.stats()
            assert e.value.status == 429 and e.value.retry_after is not None and e.value.retry_after >= 1
        ids = [c.submit(source=unique(GOOD), mode="compile", tags={"run_id": rid, "sample": i}) for i in range(6)]
        assert c.retry_count >= 3, c.retry_count
        ids += c.submit_batch([{"source": unique(GOOD), "mode": "compile", "tags": {"run_id": rid, "sample": 6 + i}}
                               for i in range(4)], batch_size=2)
        assert len(set(ids)) == 10
    assert sorted(_count_rows(s.url, admin, rid)) == sorted(ids)


def test_async_retries_429_without_duplicates(limited):
    s, tok, admin = limited
    rid = run_id()

    async def go():
        async with kevald.AsyncClient(s.url, token=tok, retries=20, backoff=0.05) as c:
            ids = await asyncio.gather(*(c.submit(source=unique(GOOD), mode="compile",
                                                  tags={"run_id": rid, "sample": i}) for i in range(6)))
            subs = await c.wait_all(ids, timeout=120 * SLOW)
            return list(ids), subs, c.retry_count

    ids, subs, retries = asyncio.run(go())
    assert retries >= 3
    assert [x.verdict for x in subs] == ["compiled"] * 6
    assert sorted(_count_rows(s.url, admin, rid)) == sorted(ids)


class LoseFirstAnswer:
    """A transport that delivers the first POST to the server but loses its answer."""

    def __init__(self, inner):
        self.inner = inner
        self.keys = []
        self.lost = 0

    def request(self, method, path, params=None, body=None, headers=None, timeout=None):
        resp = self.inner.request(method, path, params, body, headers, timeout)
        if method == "POST":
            self.keys.append((headers or {}).get("Idempotency-Key"))
            if self.lost == 0:
                self.lost += 1
                raise _transport.TransportError("connection reset (simulated lost answer)")
        return resp

    def close(self):
        self.inner.close()


@pytest.mark.parametrize("batch", [False, True])
def test_lost_answer_is_not_stored_twice(server, batch):
    rid = run_id()
    with kevald.Client(server.url, backoff=0.01) as c:
        c._t = LoseFirstAnswer(c._t)
        if batch:
            ids = c.submit_batch([{"source": unique(GOOD), "mode": "compile", "tags": {"run_id": rid}}
                                  for _ in range(3)])
        else:
            ids = [c.submit(source=unique(GOOD), mode="compile", tags={"run_id": rid})]
        keys = c._t.keys
        assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) == 36   # one uuid4, reused
        assert c.retry_count == 1
        rows = [x.id for x in c.history(run_id=rid)]
        assert sorted(rows) == sorted(ids)          # the replay answered the original ids
        # A second logical submission gets a new key.
        c.submit(source=unique(GOOD), mode="compile", tags={"run_id": rid})
        assert len(set(c._t.keys)) == 2
        assert len(list(c.history(run_id=rid))) == len(ids) + 1


def test_backoff_grows_and_honours_retry_after():
    c = kevald.client._Base("http://x", backoff=1.0, backoff_max=8.0)
    for attempt, cap in ((0, 1.0), (1, 2.0), (3, 8.0), (10, 8.0)):
        ds = [c._delay(attempt, None) for _ in range(200)]
        assert all(0 <= d <= cap for d in ds) and max(ds) > cap / 2
    assert all(3 <= c._delay(0, 3) <= 3.3 for _ in range(50))
