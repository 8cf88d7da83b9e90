"""Loading models (built-in names or ``path/to/file.py:function``) and data files (NPZ, CSV)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import DomainError, ModelError

_MODELS_DIR = Path(__file__).resolve().parent.parent.parent / "models"


def builtin_models() -> dict[str, Callable]:
    """The ``BUILTIN`` dict of the top-level ``models/`` package (loaded by path)."""
    name = "bayesdp_builtin_models"
    if name in sys.modules:
        return sys.modules[name].BUILTIN
    init = _MODELS_DIR / "__init__.py"
    if not init.exists():
        try:
            import models  # type: ignore
            return models.BUILTIN
        except Exception:
            raise ModelError("the built-in models (models/) are not installed; pass path/to/file.py:function") from None
    spec = importlib.util.spec_from_file_location(name, init)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.BUILTIN


def load_model(spec: str) -> tuple[Callable, str]:
    """A built-in name (``logistic``...) or ``path/to/file.py:function``."""
    if ":" in spec and spec.rsplit(":", 1)[0].endswith(".py"):
        path, func = spec.rsplit(":", 1)
        if not os.path.isfile(path):
            raise ModelError(f"model file {path} does not exist; pass path/to/file.py:function")
        mod_name = "bayesdp_user_model_" + str(abs(hash(os.path.abspath(path))))
        try:
            s = importlib.util.spec_from_file_location(mod_name, path)
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise ModelError(f"model file {path} failed to import ({type(exc).__name__}: {first}); fix the file") \
                from None
        fn = getattr(mod, func, None)
        if fn is None or not callable(fn):
            raise ModelError(f"model file {path} has no function {func!r}; pass path/to/file.py:function")
        return fn, func
    models = builtin_models()
    if spec not in models:
        raise ModelError(f"model {spec!r} is not a built-in model ({', '.join(sorted(models))}) nor "
                         "path/to/file.py:function")
    return models[spec], spec


def load_data(path: str, x_columns: str | None = None, y_column: str | None = None,
              x_name: str = "X", y_name: str = "y") -> dict[str, np.ndarray]:
    """NPZ: every array is the model argument of the same name.  CSV (header row): the columns
    ``x_columns`` (comma-separated) form argument ``X``, ``y_column`` argument ``y``."""
    if not os.path.isfile(path):
        raise DomainError(f"data file {path} does not exist; pass --data FILE (NPZ or CSV) or --no-data")
    if path.endswith(".npz"):
        try:
            with np.load(path, allow_pickle=False) as f:
                return {k: np.asarray(f[k]) for k in f.files}
        except Exception as exc:
            raise DomainError(f"data file {path} is not a readable NPZ file ({type(exc).__name__}); "
                              "write it with numpy.savez") from None
    if path.endswith(".csv"):
        import csv

        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
        if len(rows) < 2:
            raise DomainError(f"data file {path} has no records; a CSV needs a header row and one row per record")
        header = [h.strip() for h in rows[0]]
        if x_columns is None and y_column is None:
            raise DomainError("a CSV needs --x-columns a,b,c and/or --y-column NAME to map columns to X and y")
        out = {}
        idx = {h: i for i, h in enumerate(header)}

        def cols(names):
            for n in names:
                if n not in idx:
                    raise DomainError(f"CSV column {n!r} is not in the header of {path} ({', '.join(header)})")
            try:
                return np.array([[float(r[idx[n]]) for n in names] for r in rows[1:]], dtype=np.float64)
            except (ValueError, IndexError):
                raise DomainError(f"CSV {path} has a non-numeric or missing value in columns "
                                  f"{', '.join(names)}; fix the file") from None

        if x_columns:
            out[x_name] = cols([c.strip() for c in x_columns.split(",") if c.strip()])
        if y_column:
            out[y_name] = cols([y_column.strip()])[:, 0]
        return out
    raise DomainError(f"data file {path} must end in .npz or .csv")
