import os, sys, subprocess, traceback, tempfile, builtins, json
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
log = []
real_popen_init = subprocess.Popen.__init__
def popen_init(self, args, *a, **k):
    log.append({"argv": [str(x) for x in (args if isinstance(args, (list, tuple)) else [args])],
                "stack": traceback.format_stack(limit=8)[:-1]})
    return real_popen_init(self, args, *a, **k)
subprocess.Popen.__init__ = popen_init
real_open = builtins.open
writes = []
def myopen(f, mode="r", *a, **k):
    if any(c in mode for c in "wax+"):
        writes.append((str(f), mode, traceback.format_stack(limit=5)[-2].strip()))
    return real_open(f, mode, *a, **k)
builtins.open = myopen
import torch, triton, triton.language as tl
@triton.jit
def k(x, y, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + i, tl.maximum(tl.load(x + i, mask=i < n), 0), mask=i < n)
x = torch.randn(4096, device="cuda"); y = torch.empty_like(x)
k[(4,)](x, y, 4096, BLOCK=1024)
torch.cuda.synchronize()
print("ok", bool((y == x.relu()).all()))
print(json.dumps(log, indent=1))
for w in writes: print("WRITE", w)
import triton.knobs as kn
print("knobs file", kn.__file__)
