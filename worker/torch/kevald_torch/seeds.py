"""
seeds - the seeds of one job, derived from its secret seed (the JOB's hex
"seed", which the supervisor reveals only in the result): one 63-bit seed per
(shape set, purpose, trial), by SHA-256, so that no two inputs of a job share
a seed and the candidate cannot predict one from another. Purposes: "init"
(the models' weights: the same for Model and ModelNew, as KernelBench does),
"check" (correctness trials), "time" (timed runs, warm-up included).
"""
import hashlib


def derive(seed, shape, purpose, trial):
    """The seed for trial @trial of @purpose on shape set @shape (index) of a
    job whose secret seed is the integer @seed: an int in [0, 2**63)."""
    msg = f"kevald-torch/v1/{seed:x}/{shape}/{purpose}/{trial}".encode()
    return int.from_bytes(hashlib.sha256(msg).digest()[:8], "little") >> 1
