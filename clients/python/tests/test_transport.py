"""
The transports' round trip on loopback: a POST must not wait for a delayed
ACK. httpx writes a request's header and body in two writes; without
TCP_NODELAY the body waits (Nagle) for the header's ACK, which the peer
delays by ~40 ms while it waits for the body. A plain HTTP/1.1 server of the
standard library stands in for kevald here, so the test is about the
client's writes alone; bench/http/latency.py measures it against kevald.
"""
import asyncio
import http.server
import json
import statistics
import threading
import time

import pytest

from kevald import _transport

ROUNDS = 30


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 - the stdlib's name
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        out = json.dumps({"len": len(body)}).encode()
        # One write, as kevald answers, so only the client's writes are measured.
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(out), out))

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def base_url():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


BODY = {"task": "vector_add", "mode": "compile", "source": "x" * 300}


def _median_ms(call):
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        r = call()
        times.append((time.perf_counter() - t0) * 1e3)
        assert r.status == 200 and r.json() == {"len": len(json.dumps(BODY, separators=(",", ":")))}
    return statistics.median(times)


@pytest.mark.skipif(not _transport.HAVE_HTTPX, reason="httpx is not installed")
def test_sync_httpx_post_is_one_round_trip(base_url):
    t = _transport.make_sync(base_url, {}, 10.0)
    try:
        med = _median_ms(lambda: t.request("POST", "/x", body=BODY))
    finally:
        t.close()
    # With Nagle and a delayed ACK each POST on a kept-alive connection takes ~40 ms.
    assert med < 15.0, f"median POST {med:.1f} ms: the body waited for a delayed ACK"


@pytest.mark.skipif(not _transport.HAVE_HTTPX, reason="httpx is not installed")
def test_async_httpx_post_is_one_round_trip(base_url):
    # asyncio sets TCP_NODELAY on its own TCP sockets; this holds the async transport to the same bar.
    async def run():
        t = _transport.make_async(base_url, {}, 10.0)
        times = []
        try:
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                r = await t.request("POST", "/x", body=BODY)
                times.append((time.perf_counter() - t0) * 1e3)
                assert r.status == 200
        finally:
            await t.close()
        return statistics.median(times)

    med = asyncio.run(run())
    assert med < 15.0, f"median POST {med:.1f} ms: the body waited for a delayed ACK"


def test_urllib_post_is_one_round_trip(base_url):
    t = _transport.make_sync(base_url, {}, 10.0, backend="urllib")
    med = _median_ms(lambda: t.request("POST", "/x", body=BODY))
    assert med < 15.0, f"median POST {med:.1f} ms"
