"""
kevald: client for the kevald CUDA kernel scoring service.

    import kevald
    with kevald.Client("http://127.0.0.1:8080", token=None) as c:
        sub = c.evaluate(source=src, task="l1_19_relu", plan=plan)
        r = kevald.reward.reward(sub)

Sync (Client) and asyncio (AsyncClient) clients with the same methods;
typed results (kevald.models); errors carrying the server's problem+json
(kevald.errors); RL rewards (kevald.reward); multi-turn feedback
(kevald.turns); Triton kernels compiled here and judged there
(kevald.triton; Triton itself is imported only when a kernel is compiled).
httpx is used when importable, else urllib.
"""
from . import errors, models, reward, triton, turns
from ._transport import HAVE_HTTPX
from .client import AsyncClient, Client
from .errors import (BadRequest, Conflict, KevaldConnectionError, KevaldError, NotFound, PayloadTooLarge,
                     RateLimited, ServerError, Unauthorized, Unavailable, ValidationError)
from .models import (BufferCheck, CompileInfo, Correctness, ErrorInfo, GpuInfo, KernelInfo, Mismatch, Result,
                     ShapeCorrectness, ShapeTiming, Stats, Submission, Timing)

__version__ = "0.1.0"
__all__ = ["Client", "AsyncClient", "KevaldError", "BadRequest", "Unauthorized", "NotFound", "Conflict",
           "PayloadTooLarge", "ValidationError", "RateLimited", "Unavailable", "ServerError",
           "KevaldConnectionError", "Submission", "Result", "CompileInfo", "KernelInfo", "Correctness",
           "ShapeCorrectness", "BufferCheck", "Mismatch", "Timing", "ShapeTiming", "Stats", "ErrorInfo",
           "GpuInfo", "reward", "triton", "turns", "errors", "models", "HAVE_HTTPX"]
