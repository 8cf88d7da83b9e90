"""Up-front checks of machine resources: memory and output paths.

Every command checks what it will write and what it will allocate BEFORE any sampling, analysis or
ledger charge, so that a run never dies after the work (an h5py traceback at the end of a long run, an
out-of-memory abort half-way through) and never leaves a charged ledger behind.  Each check raises a
one-line [`AssumptionError`][bayesdp.errors.AssumptionError] naming the option, the value and what to do.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re

import signal
from typing import Any, Callable, Mapping

from .errors import AssumptionError
import sys

__all__ = ["available_memory_bytes", "require_memory", "check_output_file", "check_output_dir", "check_state_file",
           "check_input_file", "write_file", "same_file", "is_ledger", "remove_stale_temporaries", "fsync", "GIB", "return_freed_memory"]

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


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file: the same real path (symbolic links resolved) or the same
    device and inode (hard links).

    Args:
        a: a path.
        b: another path.

    Returns:
        True when writing ``a`` would replace ``b``'s content.

    Examples:
        >>> import os, tempfile
        >>> root = tempfile.mkdtemp(); f = os.path.join(root, "data.npz"); open(f, "w").close()
        >>> os.link(f, os.path.join(root, "alias.npz"))
        >>> same_file(os.path.join(root, "alias.npz"), f), same_file(os.path.join(root, "new.npz"), f)
        (True, False)
    """
    ra, rb = os.path.realpath(os.fspath(a)), os.path.realpath(os.fspath(b))
    if ra == rb:
        return True
    try:
        sa, sb = os.stat(ra), os.stat(rb)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def is_ledger(path: str) -> bool:
    r"""Whether ``path`` is a privacy ledger (an SQLite database or a bayesdp ledger journal): sniffed from
    its first 4 KiB, never parsed.

    Args:
        path: a file.

    Returns:
        True for a ledger (an existing file only).

    Examples:
        >>> import os, tempfile
        >>> f = os.path.join(tempfile.mkdtemp(), "x.db")
        >>> _ = open(f, "wb").write(b"SQLite format 3\x00" + bytes(100))
        >>> is_ledger(f), is_ledger(f + ".missing")
        (True, False)
    """
    try:
        with open(os.fspath(path), "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.startswith(b"SQLite format 3\x00") or b"bayesdp-ledger" in head


def _check_folder(path: str, option: str) -> None:
    """The folder of the file ``path`` exists and is writable."""
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise AssumptionError(f"{option} {path}: {folder} is a file, not a folder; choose another path")
        raise AssumptionError(f"{option} {path}: the folder {folder} does not exist; create it first or choose "
                              "another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AssumptionError(f"{option} {path}: the folder {folder} is not writable; choose another path")


def check_output_file(path: str, option: str, overwrite: bool = False, overwrite_flag: str | None = None,
                      inputs: Mapping[str, Any] | None = None) -> None:
    """``path`` can be written: its folder exists and is writable, it is not a folder, it is none of the
    command's ``inputs`` nor a ledger (through any name: symbolic or hard links), and an existing file is
    only replaced with ``overwrite`` (``overwrite_flag`` names the option that allows it).

    Args:
        path: the output file.
        option: the option that gave it, e.g. ``"--out"`` (shown in the message).
        overwrite: whether an existing file may be replaced.
        overwrite_flag: the option that sets ``overwrite``, named in the message.
        inputs: the files the command reads, ``{option: path}`` (e.g. ``{"--data": "data.npz"}``; None
            values are skipped).

    Raises:
        AssumptionError: the path is a folder, its folder is missing or not writable, it is an input or a
            ledger, or it exists without ``overwrite``.

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
    _check_folder(path, option)
    for opt, src in (inputs or {}).items():
        if src is not None and os.path.exists(os.fspath(src)) and same_file(p, src):
            raise AssumptionError(f"{option} {path} is the input file {opt} {src} (the same file); writing would "
                                  "replace it: choose another path")
    if os.path.exists(p) and is_ledger(p):
        raise AssumptionError(f"{option} {path} is a privacy ledger; writing would erase its record of spent "
                              "budget: choose another path")
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
    _check_folder(path, option)


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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):     # another user's process, or not a PID at all: left alone
        return True
    return True


def remove_stale_temporaries(path: str, pattern: str | None = None) -> list[str]:
    """Remove the temporaries beside ``path`` that a process which no longer runs left (killed while writing):
    by default :func:`write_file`'s ``PATH.tmp-PID``; those of running processes stay.

    Args:
        path: the destination file.
        pattern: a regular expression of a temporary's file name whose first group is the writer's PID
            (default ``NAME.tmp-PID``).

    Returns:
        the removed paths.

    Examples:
        >>> import os, tempfile
        >>> out = os.path.join(tempfile.mkdtemp(), "plan.json")
        >>> open(out + ".tmp-999999999", "w").close()          # no such process
        >>> [os.path.basename(p) for p in remove_stale_temporaries(out)]
        ['plan.json.tmp-999999999']
    """
    p = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(p)
    rx = re.compile(pattern or re.escape(os.path.basename(p)) + r"\.tmp-(\d+)")
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = rx.fullmatch(name)
        if m and not _pid_alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))
                removed.append(os.path.join(folder, name))
    return removed


def fsync(path: str) -> None:
    """Flush the file or folder ``path`` to the disk (``os.fsync`` of a read-only descriptor).

    Args:
        path: a file or a folder.

    Raises:
        OSError: it cannot be opened or flushed.

    Examples:
        >>> import tempfile
        >>> fsync(tempfile.mkdtemp())
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(getattr(exc, 'strerror', None) or exc).splitlines() or [''])[0][:160]}"


def write_file(path: str, content: str | bytes | Callable[[str], None], *, option: str = "--out",
               overwrite: bool = False, overwrite_flag: str | None = "--overwrite",
               inputs: Mapping[str, Any] | None = None) -> str:
    r"""Write one output file so that nothing is lost: the checks of :func:`check_output_file` (not an input,
    not a ledger, an existing file only with ``overwrite``), then a temporary ``PATH.tmp-PID`` in the
    destination folder, fsync, rename over ``path`` and fsync of the folder.  A failure (full disk,
    file-size limit, permissions) leaves ``path`` as it was and no temporary behind; temporaries of killed
    processes are removed first (:func:`remove_stale_temporaries`).

    Args:
        path: the destination file.
        content: the text or bytes to write, or a function ``writer(tmp_path)`` that writes the file itself
            (e.g. NetCDF through h5netcdf).
        option: the option or argument that gave ``path`` (named in messages).
        overwrite: whether an existing file may be replaced.
        overwrite_flag: the option that sets ``overwrite`` (named in the message).
        inputs: the files the command reads, ``{option: path}``: writing over one of them is refused.

    Returns:
        ``path``.

    Raises:
        AssumptionError: a refused destination, or an operating-system error while writing: one line naming
            the path (nothing was written).

    Examples:
        >>> import os, tempfile
        >>> out = os.path.join(tempfile.mkdtemp(), "plan.json")
        >>> write_file(out, "{}\n") == out, open(out).read()
        (True, '{}\n')
        >>> write_file(out, "{}\n")   # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        bayesdp.errors.AssumptionError: --out .../plan.json already exists; choose another path or pass --overwrite to replace it
    """
    path = os.fspath(path)
    check_output_file(path, option, overwrite=overwrite, overwrite_flag=overwrite_flag, inputs=inputs)
    p = os.path.abspath(path)
    if os.path.islink(p):          # replace what the link points to, never the link by a file
        p = os.path.realpath(p)
    remove_stale_temporaries(p)
    tmp = f"{p}.tmp-{os.getpid()}"
    old = signal.getsignal(signal.SIGXFSZ) if hasattr(signal, "SIGXFSZ") else None
    try:
        if old is not None:          # a file-size limit: an OSError (EFBIG), not a killed process
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    except ValueError:               # not the main thread
        old = None
    try:
        if callable(content):
            content(tmp)
        else:
            with open(tmp, "wb") as fh:
                fh.write(content.encode() if isinstance(content, str) else bytes(content))
        fsync(tmp)
        os.replace(tmp, p)
        with contextlib.suppress(OSError):   # a folder that cannot be opened for fsync (some file systems)
            fsync(os.path.dirname(p))
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise AssumptionError(f"{option} {path}: writing failed ({_one_line(exc)}); nothing was written, check "
                                  "the free space and permissions of the folder") from None
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGXFSZ, old)
    return path


def return_freed_memory() -> None:
    """Give the heap's free pages back to the operating system (glibc's ``malloc_trim(0)``; elsewhere nothing): memory
    a program freed (a compilation's, a dropped cache's) otherwise stays in the process's resident memory.

    Examples:
        >>> return_freed_memory()          # returns None on every platform
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc (musl has no malloc_trim)
        return
