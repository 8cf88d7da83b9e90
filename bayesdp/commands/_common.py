"""Up-front validation shared by the commands: every option is checked, with its flag name, before a
file is read, a model traced, a chain run or a ledger touched (issue #13, item 4)."""

from __future__ import annotations

from typing import Any, Callable

from ..cli import ARG_TYPES, emit_json
from ..errors import AssumptionError, check_finite
from ..resources import check_input_file
import numpy as np


def emit(args, result: Any, text: Callable[[], str] | None = None) -> None:
    """Print ``result`` as JSON with ``--json`` (its ``to_dict()`` when it has one), else ``text()`` (default:
    ``result.table()``)."""
    if args.json:
        emit_json(result.to_dict() if hasattr(result, "to_dict") else result)
    else:
        print(result.table() if text is None else text())


def add_model_options(p) -> None:
    """--x-columns, --y-column, --prior-scale and --model-arg (on a parser or an argument group)."""
    p.add_argument("--x-columns", help="CSV/Parquet: comma-separated feature columns (argument X)")
    p.add_argument("--y-column", help="CSV/Parquet: response column (argument y)")
    p.add_argument("--prior-scale", type=ARG_TYPES[float], help="prior scale of a built-in model")
    p.add_argument("--model-arg", action="append", default=[], metavar="NAME=VALUE",
                   help="other numeric model hyperparameter, e.g. num_classes=3 (repeat)")


def add_chain_options(p) -> None:
    """--step-size, --num-steps, --batch-size, --inverse-temperature and --clip-norm (on a parser or a group)."""
    p.add_argument("--step-size", type=ARG_TYPES[float], help="step size gamma")
    p.add_argument("--num-steps", type=ARG_TYPES[int], help="number of steps n")
    p.add_argument("--batch-size", type=ARG_TYPES[int], help="SGLD minibatch size s (without replacement)")
    p.add_argument("--inverse-temperature", type=ARG_TYPES[float], default=1.0, help="beta (default 1)")
    p.add_argument("--clip-norm", type=ARG_TYPES[float], help="clip each record's likelihood gradient at this norm")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _checked(args, dest: str, ok, needs: str, fix: str = "") -> None:
    v = getattr(args, dest, None)
    if v is not None and not ok(check_finite(_flag(dest), v)):
        raise AssumptionError(f"{_flag(dest)} = {v:g} must be {needs}" + (f"; {fix}" if fix else ""))


def positive_opt(args, dest: str, fix: str = "") -> None:
    _checked(args, dest, lambda x: x > 0, "> 0", fix)


def nonnegative_opt(args, dest: str) -> None:
    _checked(args, dest, lambda x: x >= 0, ">= 0")


def open_unit_opt(args, dest: str, example: str) -> None:
    """A value in (0, 1) (delta, level, confidence)."""
    _checked(args, dest, lambda x: 0.0 < x < 1.0, "in (0, 1)", f"pass e.g. {example}")


def half_open_unit_opt(args, dest: str) -> None:
    """A value in [0, 1) (a delta budget or cap)."""
    _checked(args, dest, lambda x: 0.0 <= x < 1.0, "in [0, 1)")


def count_opt(args, dest: str, minimum: int = 1) -> None:
    v = getattr(args, dest, None)
    if v is not None and v < minimum:
        raise AssumptionError(f"{_flag(dest)} = {v} must be an integer >= {minimum}")


def seed_opt(args, dest: str = "seed") -> None:
    v = getattr(args, dest, None)
    if v is None:
        return
    from ..samplers.keys import MAX_SEED          # the samplers package loads JAX

    if not 0 <= v <= MAX_SEED:
        raise AssumptionError(f"{_flag(dest)} = {v} must be an integer in [0, {MAX_SEED}]; or omit it for keys "
                              "from the OS CSPRNG")


def sampler_opts(args, sgld_needs_batch: bool = True) -> None:
    """The sampler settings every sampling command shares."""
    positive_opt(args, "step_size", "pass a positive step size")
    count_opt(args, "num_steps")
    count_opt(args, "batch_size")
    positive_opt(args, "inverse_temperature")
    positive_opt(args, "clip_norm", "pass a positive clipping norm, or omit it")
    count_opt(args, "num_chains")
    count_opt(args, "thinning")
    if getattr(args, "batch_size", None) is not None and getattr(args, "sampler", None) == "ula":
        raise AssumptionError(f"--batch-size {args.batch_size} applies to --sampler sgld; ULA uses the full batch "
                              "(drop --batch-size or pass --sampler sgld)")
    if sgld_needs_batch and getattr(args, "sampler", None) == "sgld" and getattr(args, "batch_size", None) is None:
        raise AssumptionError("--sampler sgld needs --batch-size s (minibatch size, 1 <= s <= number of records)")


def data_file_opt(args, dest: str = "data") -> None:
    """The data file exists and is readable (checked by the command, whose options the message names)."""
    v = getattr(args, dest, None)
    if v is not None:

        check_input_file(v, _flag(dest))


def csv_opts(args) -> None:
    """--x-columns / --y-column only make sense with a table (CSV or Parquet)."""
    data = getattr(args, "data", None)
    if (getattr(args, "x_columns", None) or getattr(args, "y_column", None)) and data is not None \
            and not str(data).endswith((".csv", ".parquet", ".pq")):
        raise AssumptionError(f"--x-columns / --y-column apply to CSV or Parquet data, but --data {data} is "
                              "neither; drop them (an NPZ file names its arrays)")


def model_kwargs(args) -> dict:
    """Model hyperparameters from --prior-scale and --model-arg NAME=VALUE, each checked by name."""
    kw: dict[str, Any] = {}
    if getattr(args, "prior_scale", None) is not None:
        positive_opt(args, "prior_scale", "the prior's scale must be positive")
        kw["prior_scale"] = args.prior_scale
    for item in getattr(args, "model_arg", None) or []:
        if "=" not in item:
            raise AssumptionError(f"--model-arg {item!r} is not NAME=VALUE; e.g. --model-arg num_classes=3")
        k, v = item.split("=", 1)
        k = k.strip()
        if not k.isidentifier():
            raise AssumptionError(f"--model-arg {item!r}: {k!r} is not an argument name; e.g. --model-arg "
                                  "num_classes=3")
        try:
            num = float(v)
        except ValueError:
            raise AssumptionError(f"--model-arg {k} = {v!r} is not a number; pass a number") from None
        check_finite(f"--model-arg {k}", num)
        if k in kw:
            raise AssumptionError(f"--model-arg {k} is given twice (or also as --prior-scale); give it once")
        kw[k] = int(num) if num.is_integer() and "." not in v else num
    return kw


def infer_num_classes(name: str, kw: dict, data: dict | None, domain_values=None) -> None:
    """The built-in ``softmax``: num_classes from the declared y.values or, for a sampler, the labels."""
    if name != "softmax" or "num_classes" in kw:
        return

    if domain_values is not None:
        kw["num_classes"] = int(max(domain_values)) + 1
    elif data is not None and "y" in data and len(data["y"]):
        y = np.asarray(data["y"])
        if np.issubdtype(y.dtype, np.number) and np.all(np.isfinite(y)):
            kw["num_classes"] = int(np.max(y)) + 1


def domain_entries(domain: dict) -> list[str]:
    """``Domain.to_dict()`` back to ``ARG.KEY=VALUE`` entries."""
    out = []
    for arg, spec in domain.items():
        for key, v in spec.items():
            out.append(f"{arg}.{key}=" + (",".join(repr(float(x)) for x in v) if isinstance(v, list) else repr(v)))
    return out


def apply_plan(args, *, chain: bool = True):
    """With ``--plan FILE``: the plan's model, domain and (``chain``) sampler settings become the options
    (a flag that contradicts the plan is refused).  Returns the plan, or None without ``--plan``."""
    path = getattr(args, "plan", None)
    if not path:
        return None
    from ..plan import Plan                       # loads the analyzer (JAX)

    plan = Plan.load(path)      # its model reference is resolved by Plan.load (built-in or file.py:function)
    given = getattr(args, "model", None)
    if given and given != plan.model:
        raise AssumptionError(f"MODEL {given} contradicts --plan {path} (model {plan.model}); drop MODEL")
    args.model = plan.model
    if getattr(args, "domain", None):
        raise AssumptionError(f"--domain contradicts --plan {path}, which holds the domain; drop --domain")
    args.domain = domain_entries(dict(plan.domain))
    args.model_arg = [f"{k}={v}" for k, v in plan.model_kwargs.items()] + list(getattr(args, "model_arg", []) or [])
    if chain:
        if plan.sampler is None:
            raise AssumptionError(f"--plan {path} is a {plan.mechanism} plan: it has no chain to run")
        for dest in ("step_size", "num_steps", "batch_size", "clip_norm"):
            if getattr(args, dest, None) is not None and getattr(args, dest) != getattr(plan, dest):
                raise AssumptionError(f"{_flag(dest)} {getattr(args, dest)} contradicts --plan {path} "
                                      f"({getattr(plan, dest)}); drop {_flag(dest)}")
            setattr(args, dest, getattr(plan, dest))
        args.sampler = plan.sampler
        args.inverse_temperature = plan.inverse_temperature
        args.num_chains = plan.num_chains
        if hasattr(args, "release") and args.release is not None and plan.mechanism != "release":
            args.release = plan.release
        args.delta = plan.delta
    return plan

