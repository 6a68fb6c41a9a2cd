"""
cudaerr - the CUDA error of a torch exception, by name: torch reports CUDA
runtime errors as text ("CUDA error: an illegal memory access was
encountered"), kevald names them as the driver does (CUDA_ERROR_*), the
names kevald-gpu reports. Sticky errors leave the context unusable: the
worker answers the job and exits 3.
"""
import re

# cudaGetErrorString text -> (driver name, sticky)
TEXTS = [
    ("an illegal memory access was encountered", "CUDA_ERROR_ILLEGAL_ADDRESS", True),
    ("misaligned address", "CUDA_ERROR_MISALIGNED_ADDRESS", True),
    ("device-side assert triggered", "CUDA_ERROR_ASSERT", True),
    ("an illegal instruction was encountered", "CUDA_ERROR_ILLEGAL_INSTRUCTION", True),
    ("an invalid program counter was encountered", "CUDA_ERROR_INVALID_PC", True),
    ("hardware stack error", "CUDA_ERROR_HARDWARE_STACK_ERROR", True),
    ("unspecified launch failure", "CUDA_ERROR_LAUNCH_FAILED", True),
    ("the launch timed out and was terminated", "CUDA_ERROR_LAUNCH_TIMEOUT", True),
    ("uncorrectable ECC error encountered", "CUDA_ERROR_ECC_UNCORRECTABLE", True),
    ("operation not supported on global/shared address space", "CUDA_ERROR_INVALID_ADDRESS_SPACE", True),
    ("too many resources requested for launch", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", False),
    ("invalid configuration argument", "CUDA_ERROR_INVALID_VALUE", False),
    ("invalid argument", "CUDA_ERROR_INVALID_VALUE", False),
    ("out of memory", "CUDA_ERROR_OUT_OF_MEMORY", False),
    ("no kernel image is available for execution on the device", "CUDA_ERROR_NO_BINARY_FOR_GPU", False),
    ("invalid device function", "CUDA_ERROR_NOT_FOUND", False),
    ("invalid resource handle", "CUDA_ERROR_INVALID_HANDLE", False),
    ("invalid device ordinal", "CUDA_ERROR_INVALID_DEVICE", False),
    ("operation not permitted when stream is capturing", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", False),
    ("an illegal", "CUDA_ERROR_ILLEGAL_ADDRESS", True),
]
_CUDA_RE = re.compile(r"CUDA (?:error|kernel errors)", re.IGNORECASE)
_NAME_RE = re.compile(r"\b(CUDA_ERROR_[A-Z_]+)\b")


def classify(exc_type_name, message):
    """(name, sticky) when the exception (its class name and text) is a CUDA
    error, else None. An unknown CUDA error text is CUDA_ERROR_UNKNOWN, taken
    as sticky (the worker then exits: a fresh context is the safe side)."""
    text = message or ""
    m = _NAME_RE.search(text)
    if exc_type_name == "OutOfMemoryError":
        return "CUDA_ERROR_OUT_OF_MEMORY", False
    for needle, name, sticky in TEXTS:
        if needle in text:
            if needle == "out of memory" or _CUDA_RE.search(text) or exc_type_name == "AcceleratorError":
                return name, sticky
    if m:
        return m.group(1), True
    if _CUDA_RE.search(text) or exc_type_name == "AcceleratorError":
        return "CUDA_ERROR_UNKNOWN", True
    return None
