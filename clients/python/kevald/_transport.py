"""
HTTP transports: one request in, (status, headers, body) out.

httpx is used when it can be imported; otherwise the synchronous transport
falls back to urllib from the standard library (no keep-alive, but the same
behaviour), and the asyncio transport runs the urllib one in a thread. Every
transport raises TransportError for "no HTTP answer" (connection refused or
reset, timeouts); an HTTP answer of any status is returned, never raised.

Every socket the httpx transports open has TCP_NODELAY: httpx writes a
request's header and its body in two writes, and with Nagle's algorithm the
body waits for the header's ACK, which the server delays (about 40 ms on
Linux) while it waits for the body; one call per agent turn paid that every
time. With httpx >= 0.24.1 (socket_options) it is an option; on older ones
the connection pool's network backend is wrapped. urllib sends a small
request in one write already.
"""
import asyncio
import json as _json
import socket
import urllib.error
import urllib.parse
import urllib.request

try:  # pragma: no cover - depends on the host
    import httpx
except ImportError:  # pragma: no cover
    httpx = None

HAVE_HTTPX = httpx is not None


class TransportError(Exception):
    """No HTTP answer: the server could not be reached, or it did not answer in time."""


class Response:
    """A raw HTTP answer: status, lower-cased headers, body bytes."""

    __slots__ = ("status", "headers", "content")

    def __init__(self, status, headers, content):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.content = content

    def json(self):
        return _json.loads(self.content.decode("utf-8")) if self.content else None

    @property
    def text(self):
        return self.content.decode("utf-8", "replace")


_NODELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def _set_nodelay(stream):
    sock = stream.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return stream


class _NoDelayBackend:
    """An httpcore network backend that sets TCP_NODELAY on each TCP connection."""

    def __init__(self, inner):
        self._inner = inner

    def connect_tcp(self, *args, **kwargs):
        return _set_nodelay(self._inner.connect_tcp(*args, **kwargs))

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _AsyncNoDelayBackend:
    def __init__(self, inner):
        self._inner = inner

    async def connect_tcp(self, *args, **kwargs):
        return _set_nodelay(await self._inner.connect_tcp(*args, **kwargs))

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _nodelay_transport(cls, wrapper, **kwargs):
    """An httpx transport of class @cls whose TCP sockets have TCP_NODELAY."""
    try:
        return cls(socket_options=_NODELAY, **kwargs)
    except TypeError:  # httpx < 0.24.1: no socket_options
        pass
    t = cls(**kwargs)
    pool = getattr(t, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is not None:
        pool._network_backend = wrapper(backend)
    return t


def _encode(body):
    return None if body is None else _json.dumps(body, separators=(",", ":")).encode()


def _clean_params(params):
    return {k: v for k, v in (params or {}).items() if v is not None}


class HttpxTransport:
    def __init__(self, base_url, headers, timeout):
        self._c = httpx.Client(base_url=base_url, headers=headers, timeout=timeout,
                               transport=_nodelay_transport(httpx.HTTPTransport, _NoDelayBackend))

    def request(self, method, path, params=None, body=None, headers=None, timeout=None):
        kw = {}
        if timeout is not None:
            kw["timeout"] = timeout
        try:
            r = self._c.request(method, path, params=_clean_params(params), content=_encode(body),
                                headers=headers, **kw)
        except httpx.TransportError as e:
            raise TransportError(f"{type(e).__name__}: {e}") from e
        return Response(r.status_code, r.headers, r.content)

    def close(self):
        self._c.close()


class UrllibTransport:
    def __init__(self, base_url, headers, timeout):
        self._base = base_url.rstrip("/")
        self._headers = dict(headers)
        self._timeout = timeout

    def request(self, method, path, params=None, body=None, headers=None, timeout=None):
        url = self._base + path
        p = _clean_params(params)
        if p:
            url += "?" + urllib.parse.urlencode(p)
        h = dict(self._headers)
        h.update(headers or {})
        req = urllib.request.Request(url, data=_encode(body), method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self._timeout) as r:
                return Response(r.status, dict(r.headers.items()), r.read())
        except urllib.error.HTTPError as e:
            return Response(e.code, dict(e.headers.items()), e.read())
        except (urllib.error.URLError, socket.timeout, ConnectionError, OSError) as e:
            raise TransportError(f"{type(e).__name__}: {e}") from e

    def close(self):
        pass


class AsyncHttpxTransport:
    def __init__(self, base_url, headers, timeout):
        limits = httpx.Limits(max_connections=128, max_keepalive_connections=64)
        self._c = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout,
                                    transport=_nodelay_transport(httpx.AsyncHTTPTransport, _AsyncNoDelayBackend,
                                                                 limits=limits))

    async def request(self, method, path, params=None, body=None, headers=None, timeout=None):
        kw = {}
        if timeout is not None:
            kw["timeout"] = timeout
        try:
            r = await self._c.request(method, path, params=_clean_params(params), content=_encode(body),
                                      headers=headers, **kw)
        except httpx.TransportError as e:
            raise TransportError(f"{type(e).__name__}: {e}") from e
        return Response(r.status_code, r.headers, r.content)

    async def close(self):
        await self._c.aclose()


class AsyncThreadTransport:
    """The urllib transport run in the default executor (no httpx)."""

    def __init__(self, base_url, headers, timeout):
        self._t = UrllibTransport(base_url, headers, timeout)

    async def request(self, method, path, params=None, body=None, headers=None, timeout=None):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: self._t.request(method, path, params, body, headers,
                                                                        timeout))

    async def close(self):
        pass


def make_sync(base_url, headers, timeout, backend=None):
    """A sync transport: @backend 'httpx', 'urllib' or None (httpx when importable)."""
    if backend == "urllib" or (backend is None and not HAVE_HTTPX):
        return UrllibTransport(base_url, headers, timeout)
    if not HAVE_HTTPX:
        raise RuntimeError("backend 'httpx' asked for but httpx cannot be imported")
    return HttpxTransport(base_url, headers, timeout)


def make_async(base_url, headers, timeout, backend=None):
    if backend == "urllib" or (backend is None and not HAVE_HTTPX):
        return AsyncThreadTransport(base_url, headers, timeout)
    if not HAVE_HTTPX:
        raise RuntimeError("backend 'httpx' asked for but httpx cannot be imported")
    return AsyncHttpxTransport(base_url, headers, timeout)
