"""Up-front checks of machine resources: memory and output paths.

Every command checks what it will write and what it will allocate BEFORE any sampling, analysis or
ledger charge, so that a run never dies after the work (an h5py traceback at the end of a long run, an
out-of-memory abort half-way through) and never leaves a charged ledger behind.  Each check raises a
one-line [`AssumptionError`][bayesdp.errors.AssumptionError] naming the option, the value and what to do.
"""

from __future__ import annotations

import os

from .errors import AssumptionError

__all__ = ["available_memory_bytes", "require_memory", "check_output_file", "check_output_dir", "check_state_file",
           "check_input_file", "GIB"]

#: bytes in a GiB (the unit of the memory messages)
GIB = float(1 << 30)


def available_memory_bytes() -> int | None:
    """Memory the process can still allocate.

    ``MemAvailable`` of /proc/meminfo (Linux), else the available physical pages; the smallest free
    accelerator memory when JAX is already imported and reports it.  None when unknown (the checks
    are then skipped).

    Returns:
        bytes, or ``None``.

    Examples:
        >>> m = available_memory_bytes()
        >>> m is None or m > 0
        True
    """
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
    """Refuse (one line) when ``needed_bytes`` exceeds the available memory.

    Args:
        needed_bytes: the estimate of what the work will allocate.
        what: the option and value that cause it, e.g. ``"--runs 100000"``.
        fix: what to do, e.g. ``"use fewer runs"``.

    Raises:
        AssumptionError: ``"{what} needs about X GiB of memory but Y GiB are available; {fix}"`` (no check
            where [`available_memory_bytes`][bayesdp.resources.available_memory_bytes] is unknown).

    Examples:
        >>> require_memory(1024.0, "a 1 KiB buffer", "use less") is None
        True
    """
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
    file is only replaced with ``overwrite`` (``overwrite_flag`` names the option that allows it).

    Args:
        path: the output file.
        option: the option that gave it, e.g. ``"--out"`` (shown in the message).
        overwrite: whether an existing file may be replaced.
        overwrite_flag: the option that sets ``overwrite``, named in the message.

    Raises:
        AssumptionError: the path is a folder, its folder is missing or not writable, or it exists
            without ``overwrite``.

    Examples:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "out.json")
        >>> check_output_file(path, "--out")              # a new file in a writable folder: fine
        >>> open(path, "w").close()
        >>> check_output_file(path, "--out", overwrite_flag="--overwrite")   # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --out .../out.json already exists; choose another path or pass --overwrite ...
    """
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
    folder).

    Args:
        path: the output folder.
        option: the option that gave it (shown in the message).

    Raises:
        AssumptionError: it exists and is not a writable folder, or cannot be created.

    Examples:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> check_output_dir(os.path.join(root, "new", "run1"), "--out-dir")   # can be created: fine
        >>> open(os.path.join(root, "file"), "w").close()
        >>> check_output_dir(os.path.join(root, "file"), "--out-dir")   # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --out-dir .../file exists and is not a folder; choose a folder
    """
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
    readable and writable file, otherwise its folder exists and is writable.

    Args:
        path: the file.
        option: the option that gave it (shown in the message).

    Raises:
        AssumptionError: the path is a folder, not readable and writable, or cannot be created.

    Examples:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp()
        >>> check_state_file(os.path.join(root, "ledger.json"), "--ledger")   # a new ledger: fine
        >>> check_state_file(root, "--ledger")   # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --ledger ... is a folder; pass the ledger file's path
    """
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
    """``path`` is an existing, readable file.

    Args:
        path: the input file.
        option: the option that gave it (shown in the message).

    Raises:
        AssumptionError: it is a folder, missing or not readable.

    Examples:
        >>> check_input_file("no-such-file.csv", "--data")
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --data no-such-file.csv does not exist; check the path
    """
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise AssumptionError(f"{option} {path} is a folder; pass a file")
    if not os.path.exists(p):
        raise AssumptionError(f"{option} {path} does not exist; check the path")
    if not os.access(p, os.R_OK):
        raise AssumptionError(f"{option} {path} is not readable; fix its permissions")
