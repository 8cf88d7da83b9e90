import os
import sys

# tests/exact.py holds independent reference values shared by several test modules.
sys.path.insert(0, os.path.dirname(__file__))


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
