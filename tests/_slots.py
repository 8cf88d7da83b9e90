"""One heavy subprocess at a time across the workers of a test session.

A fresh Python that imports JAX and compiles takes 200-330 MB. Two of them at once, each beside a pytest-xdist
worker of 600-800 MB, took the README command's process tree past 2 GB (docs/testing.md, seventeenth session).
The tests that start one hold this slot while it runs: an exclusive ``flock`` on a file shared by the session's
workers (named by xdist's run id). Where ``fcntl`` is missing the slot is a no-op.
"""

import contextlib
import os
import tempfile

try:
    import fcntl
except ImportError:          # not POSIX
    fcntl = None


@contextlib.contextmanager
def heavy_subprocess():
    """Hold the session's slot for one heavy subprocess (a context manager)."""
    if fcntl is None:
        yield
        return
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getppid())
    with open(os.path.join(tempfile.gettempdir(), f"bayesdp-tests-heavy-{run}.lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
