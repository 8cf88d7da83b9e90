"""Loading models (built-in names or ``path/to/file.py:function``) and data files (NPZ, CSV, Parquet).

CSV and Parquet files are read with [pyarrow](https://arrow.apache.org/docs/python/) straight into
the arrays the samplers read: by default ``float32`` in 64-byte-aligned buffers (``float64`` in JAX's
64-bit mode), which JAX uses in place on a CPU, so the data are held once.  CSV record batches (Parquet
columns of a row group) are parsed to ``float64`` (exactly as before) and cast one at a time into the
preallocated result: the values are bit for bit those of the old path (a ``float64`` table cast to
``float32`` by :func:`bayesdp.samplers.validate_data`) and the peak memory stays close to the size of
the arrays themselves (``bayesdp bench load`` measures time and peak memory against pandas).  NPZ
members are read blockwise into aligned buffers, ``float64`` members cast to ``float32`` block by block.
Every problem in a file is refused with one line naming the file, the column and the row (rows are
counted from 1, the header excluded): a missing column, a malformed record, a non-numeric, missing or
non-finite value, or (with a ``float32`` result) a finite value beyond ``float32``'s range.  Nothing is
skipped, filled in or clamped.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import signal
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
from numpy.lib import format as npformat

from ..errors import AssumptionError, DomainError, ModelError

__all__ = ["builtin_models", "data_format", "load_data", "load_model", "exec_user_file", "aligned_empty",
           "aligned_zeros", "record_shapes",
           "sampler_float_dtype", "ALIGNMENT", "FLOAT32_MAX"]

#: File name endings :func:`load_data` reads, by format.
SUFFIXES = {"npz": (".npz",), "csv": (".csv",), "parquet": (".parquet", ".pq")}

# The numbers Arrow's CSV reader converts to float64 (checked against pyarrow): used only to find
# the row of a value Arrow refused, so that the message can name it.
_NUMBER = re.compile(r"\s*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|nan|inf|infinity)\s*", re.IGNORECASE)
_BLOCK_SIZE = 1 << 19  # bytes of CSV text per record batch; pyarrow reads ahead ~40 blocks per stream
_MAX_THREADS = 4  # CSV byte ranges read in parallel (pyarrow parses without the GIL)
_PARALLEL_MIN_BYTES = 1 << 23  # smaller files: one stream


def builtin_models() -> dict[str, Callable]:
    """The reference NumPyro models shipped as :mod:`bayesdp.models`, by CLI name.

    Returns:
        ``{name: model function}``, e.g. ``builtin_models()["logistic"]``.

    Raises:
        ModelError: ``bayesdp.models`` cannot be imported (a broken installation).

    Examples:
        >>> from bayesdp.analysis.loading import builtin_models
        >>> sorted(builtin_models())
        ['hierarchical_logistic', 'linear', 'logistic', 'masked_logistic', 'poisson', 'robust', 'softmax', 'sparse_logistic']
    """
    try:
        from .. import models
    except ImportError as exc:
        raise ModelError(f"the built-in models (bayesdp.models) cannot be imported ({exc}); reinstall "
                         "bayesdp, or pass path/to/file.py:function") from None
    return models.BUILTIN


def exec_user_file(name: str, path: str):
    """The module of the user's Python file at ``path``, imported under ``name`` without writing bytecode: Python
    would otherwise leave ``__pycache__/`` in the user's folder (also when the command then refuses, which must
    write nothing; tests/test_bad_inputs_cli.py found it where bytecode writing is on).

    Args:
        name: the module name.
        path: the file.

    Returns:
        the executed module.

    Examples:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> path = os.path.join(folder, "stats.py")
        >>> _ = open(path, "w").write("def first(s): return s[..., 0]")
        >>> callable(exec_user_file("user_stats", path).first), sorted(os.listdir(folder))
        (True, ['stats.py'])
    """
    s = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(s)
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        s.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = before
    return mod


def load_model(spec: str) -> tuple[Callable, str]:
    """A model function from a built-in name or ``path/to/file.py:function``.

    Args:
        spec: a name of :func:`builtin_models` (``"logistic"``) or ``"path/to/file.py:function"``.

    Returns:
        ``(model, name)``: the NumPyro model function and its name.

    Raises:
        ModelError: the file does not exist, fails to import or has no such function, or the name
            is not a built-in model.

    Examples:
        >>> from bayesdp.analysis.loading import load_model
        >>> model, name = load_model("logistic")
        >>> name
        'logistic'
    """
    if ":" in spec and spec.rsplit(":", 1)[0].endswith(".py"):

        path, func = spec.rsplit(":", 1)
        if not os.path.isfile(path):
            raise ModelError(f"model file {path} does not exist; pass path/to/file.py:function")
        mod_name = "bayesdp_user_model_" + str(abs(hash(os.path.abspath(path))))
        signalled = []     # a real Ctrl-C (SIGINT) while importing stays an interrupt; one the file raises does not

        def on_sigint(signum, frame):
            signalled.append(signum)
            raise KeyboardInterrupt
        installed, previous = True, signal.getsignal(signal.SIGINT)
        try:
            signal.signal(signal.SIGINT, on_sigint)
        except ValueError:          # not the main thread: no handler, a KeyboardInterrupt is then refused
            installed = False
        try:
            mod = exec_user_file(mod_name, path)
        except KeyboardInterrupt:
            if signalled:
                raise
            raise ModelError(f"model file {path} raises KeyboardInterrupt when imported; a model file must only "
                             "define the model function: remove the raise") from None
        except SystemExit as exc:       # the file would end the process (with status 0 and no output)
            raise ModelError(f"model file {path} calls sys.exit({exc.code!r}) when imported; a model file must only "
                             "define the model function: remove the call") from None
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise ModelError(f"model file {path} failed to import ({type(exc).__name__}: {first}); fix the file") \
                from None
        finally:
            if installed:
                signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
        fn = getattr(mod, func, None)
        if fn is None or not callable(fn):
            raise ModelError(f"model file {path} has no function {func!r}; pass path/to/file.py:function")
        return fn, func
    models = builtin_models()
    if spec not in models:
        raise ModelError(f"model {spec!r} is not a built-in model ({', '.join(sorted(models))}) nor "
                         "path/to/file.py:function")
    return models[spec], spec


def data_format(path: str) -> str:
    """``"npz"``, ``"csv"`` or ``"parquet"``, from the file name's ending (:data:`SUFFIXES`).

    Args:
        path: the data file's name.

    Returns:
        The format's name.

    Raises:
        DomainError: the name ends in none of them.

    Examples:
        >>> data_format("records.parquet")
        'parquet'
    """
    low = path.lower()
    for kind, endings in SUFFIXES.items():
        if low.endswith(endings):
            return kind
    raise DomainError(f"data file {path} must end in .npz, .csv or .parquet (the ending names its format); "
                      "rename or convert it")


def load_data(path: str, x_columns: str | None = None, y_column: str | None = None,
              x_name: str = "X", y_name: str = "y", dtype: str = "samplers") -> dict[str, np.ndarray]:
    """Read a data file into NumPy arrays keyed by model argument name, in 64-byte-aligned buffers.

    * NPZ: every array is the model argument of the same name, as stored, except that ``float64``
      arrays are cast to ``float32`` when the float type (``dtype``) is ``float32``.
    * CSV (a header row, then one record per row) and Parquet: the columns ``x_columns``
      (comma-separated names) form the argument ``x_name`` (records x features) and ``y_column``
      the argument ``y_name`` (one value per record), both of the float type.

    Values are parsed as ``float64`` and then cast (round to nearest), so a ``float32`` result is bit for
    bit the ``float64`` one cast to ``float32``; a finite value beyond ``float32``'s range is refused.

    Args:
        path: the file; its ending (``.npz``, ``.csv``, ``.parquet`` or ``.pq``) names the format.
        x_columns: CSV/Parquet: comma-separated feature columns, e.g. ``"age,income"``.
        y_column: CSV/Parquet: the response column.
        x_name: the model argument the features go to.
        y_name: the model argument the responses go to.
        dtype: the float type: ``"samplers"`` (default: what the samplers compute in, i.e.
            :func:`sampler_float_dtype`: ``float32`` unless JAX's 64-bit mode is on; the samplers then use
            the arrays in place, with no second copy), ``"float32"`` or ``"float64"``.

    Returns:
        ``{x_name: (m, k) array, y_name: (m,) array}`` for CSV/Parquet (only the ones asked for),
        ``{name: array}`` for NPZ.

    Raises:
        DomainError: the file is missing, unreadable or malformed, a column is missing, or a value
            is missing, not a number, not finite or beyond ``float32``'s range (with a ``float32`` result);
            the message names the file, column (array) and row.
        AssumptionError: ``dtype`` is none of the three.

    Examples:
        >>> import pathlib, tempfile
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
        >>> _ = p.write_text("a,b,label\\n0.1,0.2,1\\n-0.3,0.1,0\\n")
        >>> data = load_data(str(p), x_columns="a,b", y_column="label", dtype="float32")
        >>> data["X"].shape, data["X"].dtype, data["y"].tolist()
        ((2, 2), dtype('float32'), [1.0, 0.0])
        >>> load_data(str(p), x_columns="a", dtype="float64")["X"][:, 0].tolist()
        [0.1, -0.3]
    """
    if dtype not in ("samplers", "float32", "float64"):
        raise AssumptionError(f"dtype = {dtype!r} is not 'samplers', 'float32' or 'float64'; pass one of these")
    floating = sampler_float_dtype() if dtype == "samplers" else np.dtype(dtype)
    if not os.path.isfile(path):
        raise DomainError(f"data file {path} does not exist; pass --data with an existing NPZ, CSV or Parquet file")
    kind = data_format(path)
    if kind == "npz":
        try:
            return _read_npz(path, floating)
        except DomainError:
            raise
        except Exception as exc:
            raise DomainError(f"data file {path} is not a readable NPZ file ({type(exc).__name__}); "
                              "write it with numpy.savez") from None
    if x_columns is None and y_column is None:
        raise DomainError(f"data file {path}: a {kind.upper() if kind == 'csv' else 'Parquet'} file needs "
                          "--x-columns a,b,c and/or --y-column NAME to map its columns to X and y")
    x_cols = [c.strip() for c in (x_columns or "").split(",") if c.strip()]
    if x_columns is not None and not x_cols:
        raise DomainError(f"data file {path}: --x-columns {x_columns!r} names no column; pass a,b,c")
    y_cols = [y_column.strip()] if y_column is not None and y_column.strip() else []
    if y_column is not None and not y_cols:
        raise DomainError(f"data file {path}: --y-column {y_column!r} names no column; pass the column's name")
    read = _read_csv if kind == "csv" else _read_parquet
    X, y = read(path, x_cols, y_cols, floating)
    out = {}
    if x_cols:
        out[x_name] = X
    if y_cols:
        out[y_name] = y
    return out


#: XLA:CPU uses a host array in place only at this alignment (bytes); otherwise JAX copies it once
ALIGNMENT = 64
# bytes read from an NPZ member at a time: a zip member's readinto reads into a temporary bytes object first, and
# temporaries of 16 MB were kept by the allocator beside the data (the command line's peak memory, issue 24)
_NPZ_BLOCK = 1 << 20


def record_shapes(path: str, x_columns: str | None = None, y_column: str | None = None, x_name: str = "X",
                  y_name: str = "y") -> dict[str, tuple[tuple[int, ...], np.dtype]] | None:
    """The shapes and dtypes :func:`load_data` (float type ``"samplers"``) would return for ``path``, read from the
    file's headers without reading its values: ``{name: (shape, dtype)}``, or ``None`` where that is not known
    without reading the file (CSV; a file that cannot be read: :func:`load_data` then says why).

    Args:
        path: an NPZ or Parquet file.
        x_columns: Parquet: the comma-separated feature columns.
        y_column: Parquet: the response column.
        x_name: the model argument the features go to.
        y_name: the model argument the responses go to.

    Returns:
        ``{name: (shape, dtype)}`` or ``None``.

    Examples:
        >>> import pathlib, tempfile
        >>> p = str(pathlib.Path(tempfile.mkdtemp()) / "d.npz")
        >>> np.savez(p, X=np.zeros((5, 3)), y=np.zeros(5, np.int64))
        >>> {k: (s, str(t)) for k, (s, t) in record_shapes(p).items()}
        {'X': ((5, 3), 'float32'), 'y': ((5,), 'int64')}
    """
    floating = sampler_float_dtype()
    try:
        kind = data_format(path)
        if kind == "npz":
            return {name: (tuple(int(n) for n in shape), np.dtype(floating if cast else dtype))
                    for name, _, shape, _, dtype, cast in _npz_members(path, floating)}
        if kind == "parquet":
            from pyarrow import parquet as pq

            rows = int(pq.ParquetFile(path).metadata.num_rows)
            x_cols = [c for c in (x_columns or "").split(",") if c.strip()]
            out = {}
            if x_cols:
                out[x_name] = ((rows, len(x_cols)), np.dtype(floating))
            if y_column is not None and y_column.strip():
                out[y_name] = ((rows,), np.dtype(floating))
            return out or None
    except Exception:  # noqa: BLE001 - unknown: load_data reads the file and reports what is wrong with it
        return None
    return None


def aligned_zeros(shape, dtype=np.float32, alignment: int = ALIGNMENT) -> np.ndarray:
    """As :func:`aligned_empty`, filled with zeros by the allocator (``calloc``): a large one takes no memory until
    it is written (the operating system's zero pages), so a program can be built on its shape and dtype.

    Args:
        shape: the array's shape.
        dtype: its NumPy dtype.
        alignment: the alignment of its first byte, in bytes.

    Returns:
        a writable array of zeros.

    Examples:
        >>> Z = aligned_zeros((1000, 3), np.float32)
        >>> float(abs(Z).max()), Z.ctypes.data % 64
        (0.0, 0)
    """
    return _aligned(np.zeros, shape, dtype, alignment)


def aligned_empty(shape, dtype=np.float32, alignment: int = ALIGNMENT) -> np.ndarray:
    """An uninitialised NumPy array whose data start at a multiple of ``alignment`` bytes.

    On a CPU, JAX uses a float32 array in place (no copy) only when it is 64-byte aligned; NumPy's own large
    arrays usually start at 16 bytes past a page boundary, and a sampler built on them holds the data twice
    (the caller's array and JAX's copy).  Fill an array from this function (e.g. in chunks while reading a
    file) to hold the data once.

    Args:
        shape: the array's shape (an int or a tuple of ints).
        dtype: its NumPy dtype.
        alignment: the alignment of its first byte, in bytes.

    Returns:
        a writable, uninitialised array of ``shape`` and ``dtype`` (a view into a slightly larger buffer).

    Examples:
        >>> import numpy as np
        >>> X = aligned_empty((1000, 3), np.float32)
        >>> X[:] = 1.0
        >>> X.shape, X.dtype, X.ctypes.data % 64
        ((1000, 3), dtype('float32'), 0)
    """
    return _aligned(np.empty, shape, dtype, alignment)


def _aligned(alloc, shape, dtype, alignment: int) -> np.ndarray:
    shape = tuple(int(n) for n in np.atleast_1d(shape))
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = alloc(nbytes + alignment, np.uint8)
    offset = (-buf.ctypes.data) % alignment
    return buf[offset:offset + nbytes].view(dtype).reshape(shape)


#: the largest finite float32 (a finite float64 beyond it would become infinite in the samplers' float32)
FLOAT32_MAX = float(np.finfo(np.float32).max)
_TRUTHY = ("y", "yes", "t", "true", "on", "1")


def sampler_float_dtype() -> np.dtype:
    """The float type the samplers compute in: ``float64`` in JAX's 64-bit mode, else ``float32``.

    Read from JAX's configuration when JAX is imported, else from the ``JAX_ENABLE_X64`` environment
    variable JAX reads when it is imported (so this never imports JAX itself).

    Returns:
        ``numpy.dtype("float32")`` or ``numpy.dtype("float64")``.

    Examples:
        >>> sampler_float_dtype() in (np.dtype("float32"), np.dtype("float64"))
        True
    """
    jax = sys.modules.get("jax")
    config = getattr(jax, "config", None)
    if config is not None:
        x64 = bool(config.read("jax_enable_x64"))
    else:
        x64 = os.environ.get("JAX_ENABLE_X64", "").strip().lower() in _TRUTHY
    return np.dtype(np.float64 if x64 else np.float32)


def _cast_checked(vals: np.ndarray, dtype: np.dtype, where: Callable[[int], str]) -> np.ndarray:
    """``vals`` (finite) cast to ``dtype``, refusing a finite value the cast would make infinite."""
    if vals.dtype == dtype:
        return vals
    with np.errstate(over="ignore"):
        out = vals.astype(dtype)
    if dtype.itemsize < vals.dtype.itemsize:
        bad = np.isinf(out) & np.isfinite(vals)
        if bad.any():
            i = int(np.argmax(bad.reshape(-1)))
            raise DomainError(f"{where(i)}: value {float(vals.reshape(-1)[i])!r} is beyond the float32 range the samplers "
                              f"use (|value| <= {FLOAT32_MAX:.8g}); rescale the data or enable JAX's 64-bit mode")
    return out


def _read_npz(path: str, floating: np.dtype = np.dtype(np.float64)) -> dict[str, np.ndarray]:
    """Every array of an NPZ file, each read straight from the archive into a 64-byte-aligned buffer (issue 24,
    item 3): the samplers then use it in place, so the data are held once (``np.load`` gives unaligned arrays
    that JAX copies: twice the data).  With ``floating`` float32, float64 members are cast block by block into
    the float32 buffer (one copy of the data, not a float64 one and then a float32 one).  Object arrays are
    refused (no pickles), as ``np.load(allow_pickle=False)``."""
    out = {}
    for name, fh, shape, fortran, dtype, cast in _npz_members(path, floating):
        if dtype.hasobject:
            raise ValueError(f"array {name!r} holds Python objects (pickles are not read)")
        shape = shape[::-1] if fortran else shape
        arr = aligned_empty(shape, floating if cast else dtype)
        if cast:
            _read_cast(fh, arr.reshape(-1), dtype, path, name)
        else:
            _read_into(fh, memoryview(arr.reshape(-1).view(np.uint8)), name)
        out[name] = arr.T if fortran else arr
    return out


def _npz_members(path: str, floating: np.dtype):
    """Each member of the NPZ file: ``(name, open member read up to its values, shape, fortran order, stored
    dtype, cast)``; ``cast``: float64 values read into the float type ``floating`` (float32)."""
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            with zf.open(info) as fh:
                version = npformat.read_magic(fh)
                read_header = npformat.read_array_header_1_0 if version == (1, 0) else \
                    npformat.read_array_header_2_0
                shape, fortran, dtype = read_header(fh)
                yield (name, fh, shape, fortran, dtype,
                       dtype.kind == "f" and dtype.itemsize == 8 and floating == np.float32)


def _read_into(fh, view: memoryview, name: str) -> None:
    got = 0
    while got < len(view):    # in blocks: a zip member's readinto reads into a temporary bytes first
        n = fh.readinto(view[got:got + _NPZ_BLOCK])
        if not n:
            raise ValueError(f"array {name!r} is truncated ({got} of {len(view)} bytes)")
        got += n


def _read_cast(fh, dst: np.ndarray, stored: np.dtype, path: str, name: str) -> None:
    """Fill the flat float32 ``dst`` from the stored float64 values, ``_NPZ_BLOCK`` bytes at a time."""
    per = max(1, _NPZ_BLOCK // stored.itemsize)
    buf = np.empty(min(per, dst.size), stored)
    for start in range(0, dst.size, per):
        k = min(per, dst.size - start)
        try:
            _read_into(fh, memoryview(buf[:k].view(np.uint8)), name)
        except ValueError:
            raise ValueError(f"array {name!r} is truncated") from None
        # non-finite stored values stay non-finite (validate_records refuses them with the array's name)
        dst[start:start + k] = _cast_checked(buf[:k], np.dtype(np.float32),
                                             lambda i: f"data file {path}, array {name!r}, entry {start + i} "
                                                       "(counted in the stored order)")


class _Filler:
    """Preallocated 64-byte-aligned outputs of the float type ``dtype`` (``X`` for the first ``num_x`` columns,
    ``y`` for the last column if any) filled one column block at a time, each block checked on the way in
    (as float64: missing, not a number, not finite) and then cast (refusing a value beyond float32's range)."""

    def __init__(self, path: str, names: list[str], num_x: int, capacity: int, dtype=np.float64):
        self.path, self.names, self.num_x = path, names, num_x
        self.dtype = np.dtype(dtype)
        capacity = max(int(capacity), 1)
        self.X = aligned_empty((capacity, num_x), self.dtype) if num_x else None
        self.y = aligned_empty((capacity,), self.dtype) if len(names) > num_x else None
        self.capacity = capacity

    def reserve(self, rows: int) -> None:
        """Room for ``rows`` records; reallocates when the estimate was short (e.g. ``\\r`` line ends)."""
        if rows > self.capacity:
            self._resize(max(2 * self.capacity, rows))

    def put(self, j: int, r0: int, col) -> None:
        """Column ``j`` of records ``r0 + 1 ...`` from an Arrow array (float64 or castable)."""
        name = self.names[j].strip()
        if col.null_count:
            import pyarrow.compute as pc

            i = pc.index(col.is_null(), True).as_py()
            raise DomainError(f"data file {self.path}, column {name!r}, row {r0 + i + 1}: the value is missing; "
                              "fill in every value of the record (nothing is imputed)")
        vals = _to_float64(self.path, name, r0, col)
        if vals.dtype != self.dtype:
            with np.errstate(over="ignore"):
                vals, wide = vals.astype(self.dtype), vals
        else:
            wide = vals
        bad = ~np.isfinite(vals)   # in the cast values: a non-finite value, or a finite one the cast overflowed
        if bad.any():
            i = int(np.argmax(bad))
            if not np.isfinite(wide[i]):
                raise DomainError(f"data file {self.path}, column {name!r}, row {r0 + i + 1}: value {wide[i]} is "
                                  "not a finite number; fix or remove the record")
            _cast_checked(wide[i:i + 1], self.dtype, lambda _: f"data file {self.path}, column {name!r}, "
                                                              f"row {r0 + i + 1}")
        if j < self.num_x:
            self.X[r0:r0 + len(vals), j] = vals
        else:
            self.y[r0:r0 + len(vals)] = vals

    def finish(self, rows: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        if rows == 0:
            raise DomainError(f"data file {self.path} has no records; write a header row and one row per record")
        if rows != self.capacity:  # the first rows: a view (contiguous, aligned) of the slightly larger buffer
            return (None if self.X is None else self.X[:rows], None if self.y is None else self.y[:rows])
        return self.X, self.y

    def _resize(self, n: int) -> None:
        keep = min(n, self.capacity)
        if self.X is not None:
            X = aligned_empty((n, self.num_x), self.dtype)
            X[:keep] = self.X[:keep]
            self.X = X
        if self.y is not None:
            y = aligned_empty((n,), self.dtype)
            y[:keep] = self.y[:keep]
            self.y = y
        self.capacity = n


def _to_float64(path: str, name: str, r0: int, col) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    t = col.type
    if pa.types.is_float64(t):
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            for i, v in enumerate(col.to_pylist()):
                if not _NUMBER.fullmatch(v):
                    raise DomainError(f"data file {path}, column {name!r}, row {r0 + i + 1}: value {v[:40]!r} is "
                                      "not a number; fix the file") from None
            raise
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t):
        return pc.cast(col, pa.float64(), safe=False).to_numpy(zero_copy_only=False)
    raise DomainError(f"data file {path}, column {name!r}: values of type {t} are not numbers; store numbers")


# -- CSV ----------------------------------------------------------------------------------------------------

def _csv_header(path: str) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DomainError(f"data file {path}: the header row is not readable CSV text ({type(exc).__name__}: "
                          f"{str(exc)[:100]}); write a UTF-8 CSV with a header row") from None
    if not header:
        raise DomainError(f"data file {path} is empty; a CSV needs a header row and one row per record")
    return header


def _resolve_columns(path: str, header: list[str], wanted: list[str], what: str) -> list[str]:
    """The file's own names of the ``wanted`` columns (surrounding spaces ignored), refusing missing ones."""
    stripped = [h.strip() for h in header]
    names = []
    for w in wanted:
        hits = [i for i, h in enumerate(stripped) if h == w]
        if not hits:
            shown = ", ".join(stripped[:40]) + (", ..." if len(stripped) > 40 else "")
            raise DomainError(f"data file {path}: column {w!r} is not in the {what} ({shown}); "
                              "pass existing names to --x-columns/--y-column")
        if len(hits) > 1:
            raise DomainError(f"data file {path}: column {w!r} appears {len(hits)} times in the {what}; "
                              "give the columns distinct names")
        names.append(header[hits[0]])
    return names


def _count_lines(path: str) -> int:
    """Newlines in the file: with ``\\n`` line ends, at least the number of records after the header."""
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            n += chunk.count(b"\n")
    return max(n, 1)


def _plan_parts(path: str, header: list[str], parts: int) -> list[tuple[int, int, int]] | None:
    """Split the records into ``parts`` byte ranges at line ends: ``[(start, stop, records)]``.

    ``None`` (read the file in one stream) when a split could fall inside a quoted field (a ``"`` after
    the header line) or the header line is not the header, e.g. a quoted field with a line break."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        first = fh.readline()
        try:
            if next(csv.reader([first.decode("utf-8-sig")]), None) != header:
                return None
        except (UnicodeDecodeError, csv.Error):
            return None
        start = len(first)
        cuts = [start]
        for i in range(1, parts):
            fh.seek(max(size * i // parts, cuts[-1]))
            fh.readline()  # to the end of the line the cut falls into
            if fh.tell() < size and fh.tell() > cuts[-1]:
                cuts.append(fh.tell())
        cuts.append(size)
        plan = []
        fh.seek(start)
        for a, b in zip(cuts[:-1], cuts[1:]):
            left, lines, last = b - a, 0, b"\n"
            while left > 0:
                chunk = fh.read(min(left, 1 << 24))
                if not chunk:
                    break
                if b'"' in chunk:
                    return None
                lines += chunk.count(b"\n")
                left -= len(chunk)
                last = chunk[-1:]
            plan.append((a, b, lines + (last != b"\n")))
    return plan


def _read_csv(path: str, x_cols: list[str], y_cols: list[str],
              floating=np.float64) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Parallel over byte ranges when the file allows a safe split and the records add up, else one stream."""
    header = _csv_header(path)
    names = _resolve_columns(path, header, x_cols + y_cols, "header")
    threads = min(_MAX_THREADS, os.cpu_count() or 1)
    if threads > 1 and os.path.getsize(path) >= _PARALLEL_MIN_BYTES:
        plan = _plan_parts(path, header, threads)
        if plan and len(plan) > 1:
            import pyarrow as pa

            try:
                return _read_csv_parts(path, header, names, len(x_cols), plan, floating)
            except (_Recount, DomainError, pa.ArrowException, UnicodeDecodeError):
                pass  # the one stream below reads the file again and names the first problem's row
    return _read_csv_stream(path, header, names, len(x_cols), floating)


class _Recount(Exception):
    """A byte range held another number of records than its line ends said (e.g. blank lines)."""


def _csv_options(header: list[str], names: list[str], with_header: bool):
    import pyarrow as pa
    from pyarrow import csv as pcsv

    read = pcsv.ReadOptions(block_size=_BLOCK_SIZE, use_threads=False,
                            **({} if with_header else {"column_names": header}))
    convert = pcsv.ConvertOptions(column_types={n: pa.float64() for n in names}, include_columns=names,
                                  null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False)
    # one stream over the whole file may meet quoted values with line breaks (a text column); the byte
    # ranges never do (_plan_parts refuses files with quotes), and their chunking is faster without it
    parse = pcsv.ParseOptions(newlines_in_values=with_header)
    return read, parse, convert


def _read_csv_parts(path, header, names, num_x, plan, floating=np.float64) -> tuple[np.ndarray | None, np.ndarray | None]:
    import pyarrow as pa
    from pyarrow import csv as pcsv

    read, parse, convert = _csv_options(header, names, with_header=False)
    starts = np.cumsum([0] + [p[2] for p in plan]).tolist()
    out = _Filler(path, names, num_x, starts[-1], floating)

    def part(i: int) -> None:
        a, b, expected = plan[i]
        rows = starts[i]
        # a plain-read segment of the file (a memory map would count the file's pages as this process's memory)
        with pa.OSFile(path) as fh:
            for batch in pcsv.open_csv(fh.get_stream(a, b - a), read_options=read, parse_options=parse,
                                       convert_options=convert):
                k = batch.num_rows
                if rows + k > starts[i + 1]:
                    raise _Recount
                for j in range(len(names)):
                    out.put(j, rows, batch.column(j))
                rows += k
        if rows != starts[i + 1]:
            raise _Recount

    with ThreadPoolExecutor(len(plan)) as pool:
        for f in [pool.submit(part, i) for i in range(len(plan))]:
            f.result()
    return out.finish(starts[-1])


def _read_csv_stream(path, header, names, num_x, floating=np.float64) -> tuple[np.ndarray | None, np.ndarray | None]:
    import pyarrow as pa
    from pyarrow import csv as pcsv

    read, parse, convert = _csv_options(header, names, with_header=True)
    out = _Filler(path, names, num_x, _count_lines(path), floating)
    rows = 0
    try:
        for batch in pcsv.open_csv(path, read_options=read, parse_options=parse, convert_options=convert):
            k = batch.num_rows
            out.reserve(rows + k)
            for j in range(len(names)):
                out.put(j, rows, batch.column(j))
            rows += k
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowTypeError, UnicodeDecodeError) as exc:
        raise DomainError(_csv_problem(path, header, names, exc, rows)) from None
    return out.finish(rows)


def _csv_problem(path: str, header: list[str], names: list[str], exc: Exception, rows_read: int) -> str:
    """One line naming the first malformed record or non-numeric value (a second, slow pass with ``csv``)."""
    positions = [header.index(n) for n in names]
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            next(reader)
            row = 0
            for rec in reader:
                if not rec:
                    continue  # blank lines are skipped by the reader too
                row += 1
                where = f"row {row} (line {reader.line_num})"
                if len(rec) != len(header):
                    return (f"data file {path}, {where}: {len(rec)} fields where the header has {len(header)}; "
                            "fix the record (a missing or extra separator?)")
                if row <= rows_read:
                    continue
                for n, p in zip(names, positions):
                    v = rec[p]
                    if not v.strip():
                        return (f"data file {path}, column {n.strip()!r}, {where}: the value is missing; "
                                "fill in every value of the record (nothing is imputed)")
                    if not _NUMBER.fullmatch(v):
                        return (f"data file {path}, column {n.strip()!r}, {where}: value {v[:40]!r} is not a "
                                "number; fix the file")
    except (UnicodeDecodeError, csv.Error) as exc2:
        return f"data file {path} is not readable CSV text ({type(exc2).__name__}: {str(exc2)[:100]}); fix the file"
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return f"data file {path} is not a readable CSV file ({first}); fix the file"


# -- Parquet ------------------------------------------------------------------------------------------------

def _read_parquet(path: str, x_cols: list[str], y_cols: list[str],
                  floating=np.float64) -> tuple[np.ndarray | None, np.ndarray | None]:
    import pyarrow as pa
    from pyarrow import parquet as pq

    try:
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise DomainError(f"data file {path} is not a readable Parquet file ({first}); write it with "
                          "pandas.DataFrame.to_parquet or pyarrow.parquet.write_table") from None
    names = _resolve_columns(path, list(schema.names), x_cols + y_cols, "file's columns")
    out = _Filler(path, names, len(x_cols), pf.metadata.num_rows, floating)
    rows = 0
    try:
        for g in range(pf.num_row_groups):  # one column of one row group in memory at a time
            k = pf.metadata.row_group(g).num_rows
            for j, n in enumerate(names):
                off = rows
                for chunk in pf.read_row_group(g, columns=[n]).column(0).chunks:
                    out.put(j, off, chunk)
                    off += len(chunk)
            rows += k
    except (pa.ArrowException, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise DomainError(f"data file {path}, row group {g}: not readable ({first}); rewrite the file") from None
    return out.finish(rows)
