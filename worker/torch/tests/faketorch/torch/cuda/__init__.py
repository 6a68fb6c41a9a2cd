import os
import time


class _Props:
    name = "Fake GPU (numpy)"
    major, minor = 9, 0
    multi_processor_count = 1
    total_memory = 1 << 30
    L2_cache_size = 1 << 20


def is_available():
    return os.environ.get("FAKETORCH_NO_GPU") is None


def init():
    pass


def set_device(i):
    pass


def get_device_properties(i):
    return _Props()


# The one asynchronous "kernel" of the stand-in: torch.cuda._sleep(cycles) (a spin kernel in PyTorch)
# returns at once and holds the next synchronize until it would have ended (1 cycle = 1 ns here).
_busy_until = [0.0]


def _sleep(cycles):
    _busy_until[0] = max(_busy_until[0], time.monotonic()) + cycles / 1e9


def synchronize():
    left = _busy_until[0] - time.monotonic()
    if left > 0:
        time.sleep(left)


def empty_cache():
    pass


class Stream:
    def wait_stream(self, other):
        pass


def current_stream():
    return Stream()


def manual_seed(s):
    pass


def manual_seed_all(s):
    pass


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return (end.t - self.t) * 1000.0
