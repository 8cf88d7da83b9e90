import os
import signal
import sys

import pytest

# tests/exact.py holds independent reference values shared by several test modules.
sys.path.insert(0, os.path.dirname(__file__))

# The tests never write to the user's compilation cache (bayesdp/_jax_cache.py): the CLI's cache is off in this
# process and in every subprocess it starts; tests/test_jax_cache.py turns it on in a tmp folder explicitly.
os.environ["BAYESDP_JAX_CACHE"] = "0"


# Ctrl-C stops the run.  Code under test may swallow KeyboardInterrupt (`bayesdp.cli.main` turns it into exit
# status 130, as a command should, and many tests call it in-process): pytest then records one failed test and
# goes on.  The handler below remembers the interrupt, and the next test boundary ends the session.
_INTERRUPTED = []


def _on_sigint(signum, frame):
    _INTERRUPTED.append(signum)
    if len(_INTERRUPTED) > 1:    # a second Ctrl-C: out now, whatever runs
        os._exit(130)
    signal.default_int_handler(signum, frame)


def pytest_sessionstart(session):
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield                        # the test, its teardown included
    if _INTERRUPTED:
        pytest.exit("interrupted (Ctrl-C)", returncode=130)


def _has_gpu() -> bool:
    try:
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    except Exception:  # noqa: BLE001 - no usable backend beyond the CPU
        return False


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: runs only where JAX sees a GPU (precision on accelerators); skipped "
                                       "elsewhere")


def pytest_collection_modifyitems(config, items):
    import pytest

    gpu_items = [it for it in items if "gpu" in it.keywords]
    if gpu_items and not _has_gpu():
        skip = pytest.mark.skip(reason="needs a GPU (JAX sees none)")
        for it in gpu_items:
            it.add_marker(skip)


# Memory: a pytest process compiles thousands of small XLA programs; JAX keeps every compiled executable (and
# its tracing caches) alive for the life of the process.  Dropping them after each test module keeps the peak
# at what one module needs (docs/testing.md: the measured peak before and after).
@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    import gc

    gc.collect()
