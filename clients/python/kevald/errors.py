"""
Errors: KevaldError carries the server's RFC 9457 problem (status, title,
detail, pointer, type); one subclass per status a caller branches on.
KevaldConnectionError means no HTTP answer came (after the retries).
"""


class KevaldError(Exception):
    """An error answer from kevald (or no answer: see KevaldConnectionError)."""

    def __init__(self, status=None, title=None, detail=None, pointer=None, type=None, body=None,
                 retry_after=None):
        self.status = status
        self.title = title
        self.detail = detail
        self.pointer = pointer
        self.type = type
        self.body = body
        self.retry_after = retry_after
        msg = f"{status} {title or ''}".strip() if status else (title or "kevald error")
        if detail:
            msg += f": {detail}"
        if pointer:
            msg += f" (at {pointer})"
        super().__init__(msg)


class BadRequest(KevaldError):
    """400: empty body, malformed JSON."""


class Unauthorized(KevaldError):
    """401: missing, invalid or revoked token."""


class NotFound(KevaldError):
    """404: unknown submission (or another token's), task or path."""


class Conflict(KevaldError):
    """409: e.g. cancelling a submission that is no longer queued."""


class PayloadTooLarge(KevaldError):
    """413: body over the server's body_limit."""


class ValidationError(KevaldError):
    """422: a field is wrong; `pointer` names it (RFC 6901)."""


class RateLimited(KevaldError):
    """429: rate limit or per-token quota; `retry_after` in seconds."""


class Unavailable(KevaldError):
    """503: queue full, store busy or shutting down; `retry_after` in seconds."""


class ServerError(KevaldError):
    """500 and other 5xx."""


class KevaldConnectionError(KevaldError):
    """No HTTP answer: connection refused/reset or timed out (after retries)."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound, 409: Conflict,
              413: PayloadTooLarge, 422: ValidationError, 429: RateLimited, 503: Unavailable}


def parse_retry_after(value):
    """Retry-After as seconds (float), or None. Only the delta-seconds form is used by kevald."""
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if v >= 0 else None


def error_from_response(resp):
    """The KevaldError subclass for an HTTP error answer @resp (a _transport.Response)."""
    body = None
    try:
        body = resp.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"title": resp.text[:500]}
    cls = _BY_STATUS.get(resp.status) or (ServerError if resp.status >= 500 else KevaldError)
    return cls(status=resp.status, title=body.get("title"), detail=body.get("detail"),
               pointer=body.get("pointer"), type=body.get("type"), body=body,
               retry_after=parse_retry_after(resp.headers.get("retry-after")))
