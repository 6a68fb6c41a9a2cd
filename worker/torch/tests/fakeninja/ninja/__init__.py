"""A stand-in for pip's `ninja` package (worker/torch/tests/test_build.py):
its binary lies in data/bin, as the real package's does."""
