"""
The HTTP front door under abuse (issue 26 item 3): one client must not lock
everyone out. A slow-loris client opens more connections than the server's
connection limit from one address and trickles one header byte at a time,
which resets an idle timeout forever. The server must keep answering other
addresses at once (the per-address limit), end every trickled header at the
header deadline with a 408 problem (not wait for it), and log a bounded
number of lines about it.
"""
import re
import socket
import threading
import time

import httpx

from conftest import SLOW, SOURCE_ROOT, compile_body, submit, unique_good_source

LOG_PER_MINUTE = int(re.search(r"#define LIMIT_HTTP_LOG_PER_MINUTE (\d+)",
                               (SOURCE_ROOT / "common" / "limits.h").read_text()).group(1))
SLOW_CONNECTIONS = 400       # over --connection-limit 300
HEADER_TIMEOUT_S = 2


def normal_get(port, path="/livez"):
    """GET @path from another loopback address on a fresh connection; (first bytes, seconds)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5 * SLOW, source_address=("127.0.0.2", 0)) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = c.recv(64)
    return data, time.monotonic() - t0


def test_slow_loris_from_one_address(make_server):
    s = make_server("--connection-limit", "300", "--per-ip-connection-limit", "50",
                    "--header-timeout-s", str(HEADER_TIMEOUT_S))
    log_before = s.log_path.read_text(errors="replace").count("\n")
    slow = []
    t_open = time.monotonic()
    for _ in range(SLOW_CONNECTIONS):
        c = socket.socket()
        c.settimeout(2 * SLOW)
        try:
            c.connect(("127.0.0.1", s.port))
            c.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            pass            # refused at once: over the per-address limit
        slow.append(c)
    stop = threading.Event()

    def trickle():
        while not stop.wait(0.4):
            for c in slow:
                try:
                    c.send(b"a")
                except OSError:
                    pass

    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        # Other addresses are answered at once, while the attack holds its connections.
        times = []
        for _ in range(10):
            data, took = normal_get(s.port)
            assert data.startswith(b"HTTP/1.1 200"), data
            times.append(took)
            time.sleep(0.05)
        assert max(times) < 1.0 * SLOW, times
        with httpx.Client(base_url=s.url, timeout=30 * SLOW,
                          transport=httpx.HTTPTransport(local_address="127.0.0.2")) as c:
            # (assert_serves_normally() would ask /readyz from the attacker's own address)
            d = submit(c, compile_body(unique_good_source()))
            assert d["verdict"] == "compiled", d
            assert c.get("/readyz").status_code == 200
        # Past the header deadline (and a sweep), no trickled connection is left open.
        time.sleep(max(0.0, t_open + HEADER_TIMEOUT_S + 1.5 * SLOW - time.monotonic()))
    finally:
        stop.set()
        t.join()
    still_open, answered_408 = 0, 0
    for c in slow:
        c.settimeout(0.2)
        try:
            data = c.recv(4096)
            if data.startswith(b"HTTP/1.1 408"):
                answered_408 += 1
                assert b"application/problem+json" in data and b"request-timeout" in data, data
        except socket.timeout:
            still_open += 1
        except OSError:
            pass            # reset: closed
        c.close()
    assert still_open == 0, f"{still_open} trickled connections outlived the header deadline"
    assert answered_408 >= 40, f"only {answered_408} of the 50 held connections got a 408"
    # Hundreds of refused and timed-out connections, a bounded number of log lines.
    lines = s.log_path.read_text(errors="replace").count("\n") - log_before
    assert lines <= LOG_PER_MINUTE + 5, f"{lines} log lines"
    data, took = normal_get(s.port)
    assert data.startswith(b"HTTP/1.1 200") and took < 1.0 * SLOW
