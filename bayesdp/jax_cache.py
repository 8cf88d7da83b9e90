"""JAX's persistent compilation cache for bayesdp's programs (issue 24, item 1).

A fresh ``bayesdp`` process compiles about 40 small XLA programs of ~60 ms each; JAX's persistent cache
keeps them on disk so that the next process loads them instead.  JAX's defaults cache nothing of that size
(minimum compile time 1 s), so bayesdp sets the minimum compile time and the minimum entry size to 0.

Rules (docs/testing.md, "Compilation cache"):

- the folder is the user's own: ``$BAYESDP_JAX_CACHE`` when it names a folder, else ``$XDG_CACHE_HOME/bayesdp/jax``, else
  ``~/.cache/bayesdp/jax``; created with mode 0700, refused (the cache stays off) when it is not a directory
  owned by this user or other users may read or write it. There is no shared fallback (no ``/tmp``).
- a JAX configuration the user set wins: when ``JAX_COMPILATION_CACHE_DIR`` is in the environment, or
  ``jax.config.jax_compilation_cache_dir`` is already set, or ``JAX_ENABLE_COMPILATION_CACHE`` is false,
  bayesdp changes nothing (the user's folder and thresholds apply); a threshold the user set in the
  environment (``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``, ``..._MIN_ENTRY_SIZE_BYTES``) is kept.
- off with ``BAYESDP_JAX_CACHE=0`` (or ``false``/``no``/``off``), or the CLI flag ``--no-jax-cache``.
- the ``bayesdp`` command turns it on for its own process only: a program or a test calling
  `bayesdp.cli.main` in process keeps its JAX configuration (it may call `enable_compilation_cache` itself).

The cache holds compiled programs: bayesdp passes data to its programs as arguments, never as compile-time
constants, so no data record's bytes are written there (tests/test_jax_cache.py checks this on a chain).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from .errors import BayesDPError

__all__ = ["CACHE_ENV", "cache_dir", "enable_compilation_cache", "in_use"]

#: the environment variable: ``0``/``false``/``no``/``off`` turns the cache off, a path moves it
CACHE_ENV = "BAYESDP_JAX_CACHE"

_OFF = {"0", "false", "no", "off"}
#: the folder :func:`enable_compilation_cache` turned on in this process (None: bayesdp's cache is not on)
_IN_USE: Path | None = None


def in_use() -> Path | None:
    """The folder of bayesdp's compilation cache when :func:`enable_compilation_cache` turned it on in this process,
    else None (off, or the user's own JAX configuration): where bayesdp may keep its other start-up choices (the
    gradient layout measured by :func:`bayesdp.samplers.glm.choose_form`), never anything of the data.

    Examples:
        >>> import os
        >>> os.environ["BAYESDP_JAX_CACHE"] = "0"
        >>> enable_compilation_cache() is None and in_use() is None
        True
    """
    return _IN_USE


def disabled_by_env() -> bool:
    """True when ``BAYESDP_JAX_CACHE`` turns the cache off (``0``, ``false``, ``no`` or ``off``)."""
    return os.environ.get(CACHE_ENV, "").strip().lower() in _OFF


def cache_dir() -> Path:
    """The folder of bayesdp's compilation cache.

    Returns:
        ``$BAYESDP_JAX_CACHE`` when it names a folder, else ``$XDG_CACHE_HOME/bayesdp/jax`` (an absolute
        ``XDG_CACHE_HOME`` only, as the XDG specification says), else ``~/.cache/bayesdp/jax``.

    Examples:
        >>> import os
        >>> os.environ["BAYESDP_JAX_CACHE"] = "/home/me/jax-cache"
        >>> str(cache_dir())
        '/home/me/jax-cache'
        >>> os.environ["BAYESDP_JAX_CACHE"] = "0"             # off (as in the test suite)
        >>> cache_dir().parts[-2:]
        ('bayesdp', 'jax')
    """
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit and explicit.lower() not in _OFF:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "bayesdp" / "jax"


def _user_configured() -> str | None:
    """Why the user's own JAX configuration applies, or None when the user set none."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return "JAX_COMPILATION_CACHE_DIR is set"
    if os.environ.get("JAX_ENABLE_COMPILATION_CACHE", "").strip().lower() in _OFF:
        return "JAX_ENABLE_COMPILATION_CACHE is off"
    jax = sys.modules.get("jax")
    if jax is not None:
        if jax.config.jax_compilation_cache_dir:
            return "jax.config.jax_compilation_cache_dir is set"
        if not jax.config.jax_enable_compilation_cache:
            return "jax.config.jax_enable_compilation_cache is off"
    return None


def _private_dir(path: Path, tighten: bool = False) -> Path:
    """Create ``path`` with mode 0700 (parents too) and check it is a directory of this user that no one else
    may read or write; raise BayesDPError otherwise.  ``tighten``: bayesdp's default folder of this user with a
    looser mode (earlier versions created it 0755) is set to 0700 instead of refused."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise BayesDPError(f"jax cache folder {str(path)!r} cannot be created ({exc.strerror}); set "
                           "BAYESDP_JAX_CACHE to a folder of yours, or turn the cache off with "
                           "BAYESDP_JAX_CACHE=0") from None
    if not stat.S_ISDIR(st.st_mode):
        raise BayesDPError(f"jax cache folder {str(path)!r} is not a directory (a symbolic link or a file); "
                           "remove it, or set BAYESDP_JAX_CACHE to a folder of yours")
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise BayesDPError(f"jax cache folder {str(path)!r} belongs to user id {st.st_uid}, not to you; set "
                           "BAYESDP_JAX_CACHE to a folder of yours")
    if st.st_mode & 0o077 and tighten:   # the default folder, made 0755 by earlier versions
        os.chmod(path, 0o700)
        st = os.stat(path, follow_symlinks=False)
    if st.st_mode & 0o077:
        raise BayesDPError(f"jax cache folder {str(path)!r} has mode {stat.S_IMODE(st.st_mode):04o}: others may "
                           f"read or write it; run `chmod 700 {path}` or set BAYESDP_JAX_CACHE to a folder of yours")
    return path


def enable_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Turn on JAX's persistent compilation cache for this process, in the user's private cache folder.

    The ``bayesdp`` command does this itself (``--no-jax-cache`` or ``BAYESDP_JAX_CACHE=0`` turn it off); a
    Python program calls it once, before its first release or chain.  Nothing changes when the user configured
    JAX's cache already (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config.jax_compilation_cache_dir``) or turned it
    off (``BAYESDP_JAX_CACHE=0``, ``JAX_ENABLE_COMPILATION_CACHE=false``).  Before JAX is imported this sets
    JAX's environment variables (so the command's ``--help`` does not import JAX); after, ``jax.config``.

    Args:
        path: the cache folder (default ``$BAYESDP_JAX_CACHE``,
            ``$XDG_CACHE_HOME/bayesdp/jax`` or ``~/.cache/bayesdp/jax``); created with mode 0700.

    Returns:
        the folder now in use, or None when the cache stays as the user configured it (off, or theirs).

    Raises:
        BayesDPError: the folder cannot be created, is not a directory, belongs to another user, or others may
            read or write it (no shared fallback: the cache stays off).

    Examples:
        >>> import os
        >>> os.environ["BAYESDP_JAX_CACHE"] = "0"      # turned off (as in the test suite): nothing changes
        >>> enable_compilation_cache() is None
        True

        In a program: ``enable_compilation_cache()`` returns the folder, e.g. ``~/.cache/bayesdp/jax``.
    """
    if disabled_by_env() or _user_configured() is not None:
        return None
    if path is None:
        folder = _private_dir(cache_dir(), tighten=not os.environ.get(CACHE_ENV, "").strip())
    else:
        folder = _private_dir(Path(path).expanduser())
    env = {"JAX_COMPILATION_CACHE_DIR": str(folder), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
           "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
    global _IN_USE
    _IN_USE = folder
    jax = sys.modules.get("jax")
    if jax is None:
        # JAX reads these when it is imported; a threshold the user set in the environment stays
        for k, v in env.items():
            os.environ.setdefault(k, v)
        return folder
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES" not in os.environ:
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    try:   # JAX initialises its cache once, at the first compilation: start it again with the new folder
        from jax.experimental.compilation_cache import compilation_cache as cc

        cc.reset_cache()
    except (ImportError, AttributeError):  # pragma: no cover - older JAX: the folder applies from now on
        pass
    return folder


def add_flag(parser) -> None:
    """Add ``--no-jax-cache`` to the ``bayesdp`` argument parser."""
    parser.add_argument("--no-jax-cache", action="store_true", help="do not use JAX's persistent compilation "
                        "cache (~/.cache/bayesdp/jax; also BAYESDP_JAX_CACHE=0)")


def is_cli_process() -> bool:
    """True when this process is the ``bayesdp`` command (console script or ``python -m bayesdp.cli``),
    not a library user or a test calling `bayesdp.cli.main` in process."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", None) in ("bayesdp.cli", "bayesdp", "bayesdp.__main__"):
        return True
    return os.path.basename(sys.argv[0] if sys.argv else "") in ("bayesdp", "bayesdp.exe")


def from_cli(args=None) -> None:
    """The ``bayesdp`` command's cache: on in the command's own process unless ``--no-jax-cache`` (which sets
    ``BAYESDP_JAX_CACHE=0`` for the process and its children); a folder that cannot be used leaves it off with
    a one-line warning on stderr (the command itself runs).  Nothing happens in any other process."""
    if not is_cli_process():
        return
    if getattr(args, "no_jax_cache", False):
        os.environ[CACHE_ENV] = "0"
        return
    try:
        enable_compilation_cache()
    except BayesDPError as exc:
        print(f"warning: {exc}; running without the compilation cache", file=sys.stderr)
