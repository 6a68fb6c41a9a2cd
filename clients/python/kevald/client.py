"""
kevald.Client (synchronous) and kevald.AsyncClient (asyncio): the same
methods, the same retry policy.

Retries: connection errors (no HTTP answer), 429 and 503 are retried with
exponential backoff and full jitter (base `backoff` seconds, doubling, at
most `backoff_max`), never sooner than the server's Retry-After, at most
`retries` times; then the last error is raised. Every POST carries an
Idempotency-Key (uuid4) made once per logical submission or batch and
reused across its retries: the server answers a replay with the original
ids, so a rollout is never stored (or scored) twice even when an answer is
lost on the way back. Other errors (4xx) are raised at once as
KevaldError subclasses (kevald.errors).
"""
import asyncio
import os
import random
import re
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote as _urlquote

from . import _transport
from .errors import KevaldConnectionError, ValidationError, error_from_response
from .models import Submission

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_BATCH = 4096           # the server's default batch_limit (LIMIT_BATCH_DEFAULT)
WAIT_MAX = 600                 # LIMIT_WAIT_SECONDS_MAX: longest ?wait= the server takes
POLL_SLICE = 60                # one long-poll request waits at most this long
RETRY_STATUS = (429, 503)

_SUB_FIELDS = ("task", "task_spec", "language", "frontend", "source", "plan", "scratch", "options",
               "name_expressions", "mode", "timing", "priority", "tags")


def _build_submission(submission, kw):
    """One submission dict from a dict and/or keyword arguments (None values dropped)."""
    sub = dict(submission or {})
    for k, v in kw.items():
        if k not in _SUB_FIELDS:
            raise TypeError(f"unknown submission field {k!r} (known: {', '.join(_SUB_FIELDS)})")
        if v is not None:
            sub[k] = v
    if not sub.get("source"):
        raise TypeError("a submission needs a non-empty source")
    return sub


def _limit_from_detail(err):
    """The server's batch limit from its 422 'a batch holds at most N submissions' answer, or None."""
    if isinstance(err, ValidationError) and err.pointer == "/submissions" and err.detail:
        m = re.search(r"at most (\d+) submissions", err.detail)
        if m:
            return int(m.group(1))
    return None


class _Progress:
    """A one-line progress bar on stderr (no dependency)."""

    def __init__(self, total, enabled, stream=None):
        self.total, self.enabled = total, enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self.counts = {}
        self.t0 = time.monotonic()
        self.lock = threading.Lock()

    def update(self, sub):
        with self.lock:
            self.done += 1
            v = sub.verdict or sub.state or "?"
            self.counts[v] = self.counts.get(v, 0) + 1
            if self.enabled:
                self._draw()

    def _draw(self):
        tty = getattr(self.stream, "isatty", lambda: False)()
        if not tty:
            # Not a terminal: one line per tenth, not a carriage-return animation.
            step = max(1, self.total // 10)
            if self.done % step and self.done != self.total:
                return
        width = 30
        fill = int(width * self.done / self.total) if self.total else width
        verdicts = " ".join(f"{k}={n}" for k, n in sorted(self.counts.items()))
        line = (f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                f"{time.monotonic() - self.t0:.1f}s {verdicts}")
        if tty:
            self.stream.write("\r" + line + "\x1b[K" + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


class _Base:
    def __init__(self, base_url=None, token=None, timeout=30.0, retries=6, backoff=0.25, backoff_max=10.0,
                 batch_size=DEFAULT_BATCH, backend=None):
        self.base_url = (base_url or os.environ.get("KEVALD_URL") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("KEVALD_TOKEN")
        self.headers = {"Accept": "application/json", "User-Agent": "kevald-python/0.1.0"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.batch_size = batch_size
        self.backend = backend
        self.retry_count = 0          # retries made so far (all requests), for tests and logs

    def _delay(self, attempt, retry_after):
        d = random.uniform(0, min(self.backoff_max, self.backoff * (2 ** attempt)))
        if retry_after is not None:
            d = max(d, retry_after + random.uniform(0, 0.1 * max(retry_after, 0.1)))
        return d

    @staticmethod
    def _history_params(task, verdict, state, run_id, label, since, step=None, include_result=True):
        if isinstance(label, dict):
            if len(label) != 1:
                raise TypeError("label takes one KEY=VALUE (the server filters on one label)")
            (k, v), = label.items()
            label = f"{k}={v}"
        if isinstance(since, (int, float)):
            since = str(int(since))
        return {"task": task, "verdict": verdict, "state": state, "run_id": run_id, "label": label,
                "since": since, "step": None if step is None else int(step),
                "include": "result" if include_result else None}


class Client(_Base):
    """
    Synchronous kevald client.

    Client(base_url=None, token=None, timeout=30.0, retries=6, backoff=0.25, backoff_max=10.0,
           batch_size=4096, backend=None)

    base_url defaults to $KEVALD_URL, else http://127.0.0.1:8080; token to
    $KEVALD_TOKEN. backend: 'httpx', 'urllib' or None (httpx when importable).
    """

    def __init__(self, base_url=None, token=None, timeout=30.0, **kw):
        super().__init__(base_url, token, timeout, **kw)
        self._t = _transport.make_sync(self.base_url, self.headers, timeout, self.backend)

    def close(self):
        self._t.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- plumbing ----
    def _request(self, method, path, params=None, body=None, idem_key=None, timeout=None, ok=(200,)):
        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if idem_key:
            headers["Idempotency-Key"] = idem_key
        attempt = 0
        while True:
            try:
                resp = self._t.request(method, path, params, body, headers, timeout)
            except _transport.TransportError as e:
                if attempt >= self.retries:
                    raise KevaldConnectionError(title=f"cannot reach {self.base_url}", detail=str(e)) from e
                time.sleep(self._delay(attempt, None))
            else:
                if resp.status in ok:
                    return resp
                err = error_from_response(resp)
                if resp.status not in RETRY_STATUS or attempt >= self.retries:
                    raise err
                time.sleep(self._delay(attempt, err.retry_after))
            attempt += 1
            self.retry_count += 1

    def _json(self, *a, **kw):
        return self._request(*a, **kw).json()

    # ---- submissions ----
    def submit(self, submission=None, **kw):
        """Submit one kernel; return its id. Fields as a dict and/or keywords (source=, task=, plan=, ...)."""
        sub = _build_submission(submission, kw)
        return self._json("POST", "/v1/submissions", body=sub, idem_key=str(uuid.uuid4()),
                          ok=(202,))["id"]

    def submit_batch(self, submissions, batch_size=None):
        """
        Submit many; return their ids in the same order. Sent in batches of
        at most @batch_size (default: the client's batch_size, 4096 = the
        server's default limit; a server with a smaller limit is detected from
        its 422 answer and the batch split again). Each batch has its own
        Idempotency-Key, reused across its retries.
        """
        subs = [_build_submission(s, {}) for s in submissions]
        size = max(1, batch_size or self.batch_size)
        ids = []
        i = 0
        while i < len(subs):
            chunk = subs[i:i + size]
            try:
                body = self._json("POST", "/v1/submissions", body={"submissions": chunk},
                                  idem_key=str(uuid.uuid4()), ok=(202,))
            except ValidationError as e:
                lim = _limit_from_detail(e)
                if lim is None or lim >= len(chunk):
                    raise
                size = lim
                continue
            ids += body["ids"]
            i += len(chunk)
        return ids

    def get(self, sid):
        """The submission @sid now (result once done)."""
        return Submission.from_dict(self._json("GET", f"/v1/submissions/{int(sid)}"))

    def wait(self, sid, timeout=600.0):
        """Long-poll until @sid is done or @timeout seconds pass; return the Submission (check .done)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            w = round(max(0.0, min(POLL_SLICE, WAIT_MAX, left)), 3)
            sub = Submission.from_dict(self._json("GET", f"/v1/submissions/{int(sid)}", params={"wait": w},
                                                  timeout=w + self.timeout))
            if sub.done or deadline - time.monotonic() <= 0.001 or w == 0:
                return sub

    def wait_all(self, ids, timeout=3600.0, progress=False, concurrency=16):
        """Wait for every id (long polls, @concurrency threads); return Submissions in the order of @ids."""
        ids = list(ids)
        bar = _Progress(len(ids), progress)
        deadline = time.monotonic() + timeout

        def one(sid):
            sub = self.wait(sid, max(0.0, deadline - time.monotonic()))
            bar.update(sub)
            return sub

        if not ids:
            return []
        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(ids)))) as ex:
            return list(ex.map(one, ids))

    def evaluate(self, submission=None, timeout=600.0, **kw):
        """Submit and wait (the first ?wait= rides on the POST); return the Submission."""
        sub = _build_submission(submission, kw)
        t0 = time.monotonic()
        w = max(0, min(POLL_SLICE, int(timeout)))
        resp = self._request("POST", "/v1/submissions", params={"wait": w}, body=sub,
                             idem_key=str(uuid.uuid4()), timeout=w + self.timeout, ok=(200, 202))
        body = resp.json()
        if resp.status == 200:
            return Submission.from_dict(body)
        return self.wait(body["id"], max(0.0, timeout - (time.monotonic() - t0)))

    def cancel(self, sid):
        """Cancel a submission that has not started running (queued, or compiled and waiting for a GPU); return it (raises Conflict when it is compiling, running or done)."""
        return Submission.from_dict(self._json("DELETE", f"/v1/submissions/{int(sid)}"))

    def history(self, task=None, verdict=None, state=None, run_id=None, label=None, since=None, limit=None,
                page_size=None, step=None, include_result=True):
        """
        Iterate submissions (newest first) matching the filters, following the cursor; at most @limit.
        @step filters on tags.step (give @run_id too: that one is indexed). With @include_result (the
        default) every done item carries its result, so reward() works on what this yields; pass False
        for a lighter listing.
        """
        params = self._history_params(task, verdict, state, run_id, label, since, step, include_result)
        page_size = page_size or (250 if include_result else 1000)
        n = 0
        while True:
            params["limit"] = min(page_size, limit - n) if limit else page_size
            if params["limit"] <= 0:
                return
            body = self._json("GET", "/v1/submissions", params=params)
            for item in body.get("items", []):
                yield Submission.from_dict(item)
                n += 1
            if body.get("next_cursor") is None:
                return
            params["cursor"] = body["next_cursor"]

    # ---- tasks and operations ----
    def tasks(self, level=None, category=None):
        """Task summaries (dicts: name, title, level, category, shapes, provenance)."""
        return self._json("GET", "/v1/tasks", params={"level": level, "category": category}).get("items", [])

    def task(self, name):
        """The normalized task document (reference source inline)."""
        return self._json("GET", f"/v1/tasks/{_q(name)}")

    def task_prompt(self, name, language=None):
        """The task's prompt text for a model; @language "triton" for a Triton kernel (kevald.triton)."""
        return self._request("GET", f"/v1/tasks/{_q(name)}/prompt", params={"language": language}).text

    def stats(self):
        return self._json("GET", "/v1/stats")

    def ready(self):
        """/readyz as a dict (status 200 or 503 both answer)."""
        return self._request("GET", "/readyz", ok=(200, 503)).json()


class AsyncClient(_Base):
    """The asyncio twin of Client: the same methods, as coroutines (history is an async generator)."""

    def __init__(self, base_url=None, token=None, timeout=30.0, **kw):
        super().__init__(base_url, token, timeout, **kw)
        self._t = _transport.make_async(self.base_url, self.headers, timeout, self.backend)

    async def close(self):
        await self._t.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _request(self, method, path, params=None, body=None, idem_key=None, timeout=None, ok=(200,)):
        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if idem_key:
            headers["Idempotency-Key"] = idem_key
        attempt = 0
        while True:
            try:
                resp = await self._t.request(method, path, params, body, headers, timeout)
            except _transport.TransportError as e:
                if attempt >= self.retries:
                    raise KevaldConnectionError(title=f"cannot reach {self.base_url}", detail=str(e)) from e
                await asyncio.sleep(self._delay(attempt, None))
            else:
                if resp.status in ok:
                    return resp
                err = error_from_response(resp)
                if resp.status not in RETRY_STATUS or attempt >= self.retries:
                    raise err
                await asyncio.sleep(self._delay(attempt, err.retry_after))
            attempt += 1
            self.retry_count += 1

    async def _json(self, *a, **kw):
        return (await self._request(*a, **kw)).json()

    async def submit(self, submission=None, **kw):
        sub = _build_submission(submission, kw)
        return (await self._json("POST", "/v1/submissions", body=sub, idem_key=str(uuid.uuid4()),
                                 ok=(202,)))["id"]

    async def submit_batch(self, submissions, batch_size=None):
        subs = [_build_submission(s, {}) for s in submissions]
        size = max(1, batch_size or self.batch_size)
        ids = []
        i = 0
        while i < len(subs):
            chunk = subs[i:i + size]
            try:
                body = await self._json("POST", "/v1/submissions", body={"submissions": chunk},
                                        idem_key=str(uuid.uuid4()), ok=(202,))
            except ValidationError as e:
                lim = _limit_from_detail(e)
                if lim is None or lim >= len(chunk):
                    raise
                size = lim
                continue
            ids += body["ids"]
            i += len(chunk)
        return ids

    async def get(self, sid):
        return Submission.from_dict(await self._json("GET", f"/v1/submissions/{int(sid)}"))

    async def wait(self, sid, timeout=600.0):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            w = round(max(0.0, min(POLL_SLICE, WAIT_MAX, left)), 3)
            sub = Submission.from_dict(await self._json("GET", f"/v1/submissions/{int(sid)}",
                                                        params={"wait": w}, timeout=w + self.timeout))
            if sub.done or deadline - time.monotonic() <= 0.001 or w == 0:
                return sub

    async def wait_all(self, ids, timeout=3600.0, progress=False, concurrency=64):
        """Long-poll every id concurrently (at most @concurrency at once); Submissions in the order of @ids."""
        ids = list(ids)
        bar = _Progress(len(ids), progress)
        deadline = time.monotonic() + timeout
        sem = asyncio.Semaphore(max(1, concurrency))

        async def one(sid):
            async with sem:
                sub = await self.wait(sid, max(0.0, deadline - time.monotonic()))
            bar.update(sub)
            return sub

        return list(await asyncio.gather(*(one(s) for s in ids)))

    async def evaluate(self, submission=None, timeout=600.0, **kw):
        sub = _build_submission(submission, kw)
        t0 = time.monotonic()
        w = max(0, min(POLL_SLICE, int(timeout)))
        resp = await self._request("POST", "/v1/submissions", params={"wait": w}, body=sub,
                                   idem_key=str(uuid.uuid4()), timeout=w + self.timeout, ok=(200, 202))
        body = resp.json()
        if resp.status == 200:
            return Submission.from_dict(body)
        return await self.wait(body["id"], max(0.0, timeout - (time.monotonic() - t0)))

    async def cancel(self, sid):
        return Submission.from_dict(await self._json("DELETE", f"/v1/submissions/{int(sid)}"))

    async def history(self, task=None, verdict=None, state=None, run_id=None, label=None, since=None,
                      limit=None, page_size=None, step=None, include_result=True):
        params = self._history_params(task, verdict, state, run_id, label, since, step, include_result)
        page_size = page_size or (250 if include_result else 1000)
        n = 0
        while True:
            params["limit"] = min(page_size, limit - n) if limit else page_size
            if params["limit"] <= 0:
                return
            body = await self._json("GET", "/v1/submissions", params=params)
            for item in body.get("items", []):
                yield Submission.from_dict(item)
                n += 1
            if body.get("next_cursor") is None:
                return
            params["cursor"] = body["next_cursor"]

    async def tasks(self, level=None, category=None):
        return (await self._json("GET", "/v1/tasks", params={"level": level, "category": category})).get("items", [])

    async def task(self, name):
        return await self._json("GET", f"/v1/tasks/{_q(name)}")

    async def task_prompt(self, name, language=None):
        return (await self._request("GET", f"/v1/tasks/{_q(name)}/prompt", params={"language": language})).text

    async def stats(self):
        return await self._json("GET", "/v1/stats")

    async def ready(self):
        return (await self._request("GET", "/readyz", ok=(200, 503))).json()


def _q(name):
    return _urlquote(str(name), safe="")
