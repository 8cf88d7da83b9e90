"""Up-front checks of machine resources: memory and output paths.

Every command checks what it will write and what it will allocate BEFORE any sampling, analysis or
ledger charge, so that a run never dies after the work (an h5py traceback at the end of a long run, an
out-of-memory abort half-way through) and never leaves a charged ledger behind.  Each check raises a
one-line :class:`~bayesdp.errors.AssumptionError` naming the option, the value and what to do.
"""

from __future__ import annotations

import os

from .errors import AssumptionError

GIB = float(1 << 30)


def available_memory_bytes() -> int | None:
    """Memory the process can still allocate: ``MemAvailable`` of /proc/meminfo (Linux), else the
    available physical pages; the smallest free accelerator memory when JAX reports it.  None when
    unknown (the checks are then skipped)."""
    host = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    host = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if host is None:
        try:
            host = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            host = None
    dev = None
    try:
        import sys

        if "jax" in sys.modules:   # never import JAX just for this
            import jax

            for d in jax.local_devices():
                if d.platform == "cpu":
                    continue
                stats = d.memory_stats() or {}
                limit = stats.get("bytes_limit")
                if limit:
                    free = int(limit) - int(stats.get("bytes_in_use", 0))
                    dev = free if dev is None else min(dev, free)
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        dev = None
    cands = [v for v in (host, dev) if v is not None]
    return min(cands) if cands else None


def require_memory(needed_bytes: float, what: str, fix: str) -> None:
    """Refuse (one line) when ``needed_bytes`` exceeds the available memory."""
    avail = available_memory_bytes()
    if avail is None:
        return
    if needed_bytes > avail:
        raise AssumptionError(f"{what} needs about {needed_bytes / GIB:.3g} GiB of memory but {avail / GIB:.3g} GiB "
                              f"are available; {fix}")


def _nearest_existing(path: str) -> str:
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return p


def check_output_file(path: str, option: str, overwrite: bool = False, overwrite_flag: str | None = None) -> None:
    """``path`` can be written: its folder exists and is writable, it is not a folder, and an existing
    file is only replaced with ``overwrite`` (``overwrite_flag`` names the option that allows it)."""
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise AssumptionError(f"{option} {path} is a folder; pass a file name inside it")
    folder = os.path.dirname(p)
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise AssumptionError(f"{option} {path}: {folder} is a file, not a folder; choose another path")
        raise AssumptionError(f"{option} {path}: the folder {folder} does not exist; create it first or choose "
                              "another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AssumptionError(f"{option} {path}: the folder {folder} is not writable; choose another path")
    if os.path.exists(p):
        if not overwrite:
            how = f"pass {overwrite_flag} to replace it" if overwrite_flag else "remove it first"
            raise AssumptionError(f"{option} {path} already exists; choose another path or {how}")
        if not os.access(p, os.W_OK):
            raise AssumptionError(f"{option} {path} exists and is not writable; choose another path")


def check_output_dir(path: str, option: str) -> None:
    """``path`` is a writable folder, or can be created (its nearest existing ancestor is a writable
    folder)."""
    p = os.path.abspath(os.fspath(path))
    if os.path.exists(p):
        if not os.path.isdir(p):
            raise AssumptionError(f"{option} {path} exists and is not a folder; choose a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise AssumptionError(f"{option} {path} is not writable; choose another folder")
        return
    anc = _nearest_existing(p)
    if not os.path.isdir(anc):
        raise AssumptionError(f"{option} {path}: {anc} is a file, so the folder cannot be created; choose another "
                              "folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise AssumptionError(f"{option} {path}: {anc} is not writable, so the folder cannot be created; choose "
                              "another folder")


def check_state_file(path: str, option: str) -> None:
    """A file the command reads and rewrites in place (a ledger): not a folder; if it exists it is a
    readable and writable file, otherwise its folder exists and is writable."""
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise AssumptionError(f"{option} {path} is a folder; pass the ledger file's path")
    if os.path.exists(p):
        if not os.access(p, os.R_OK | os.W_OK):
            raise AssumptionError(f"{option} {path} is not readable and writable; fix its permissions")
        return
    folder = os.path.dirname(p)
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise AssumptionError(f"{option} {path}: {folder} is a file, not a folder; choose another path")
        raise AssumptionError(f"{option} {path}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AssumptionError(f"{option} {path}: the folder {folder} is not writable; choose another path")


def check_input_file(path: str, option: str) -> None:
    """``path`` is an existing, readable file."""
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise AssumptionError(f"{option} {path} is a folder; pass a file")
    if not os.path.exists(p):
        raise AssumptionError(f"{option} {path} does not exist; check the path")
    if not os.access(p, os.R_OK):
        raise AssumptionError(f"{option} {path} is not readable; fix its permissions")
