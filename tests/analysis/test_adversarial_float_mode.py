"""Adversarial checks of FLOAT arithmetic (session adv22): programs that ``analyze(..., arithmetic="float")``
(docs/analysis.md, "Float rounding"; bayesdp/analysis/structure/floats.py) may certify although the float32 program
JAX runs has a larger, or a NaN / infinite, per-record gradient.

The harness is tests/analysis/test_adversarial_rounding.py's (itself built on test_adversarial_undefined.py's
``_check``): each case lists WITNESSES (the residual ``r``, the record ``y``, the feature vector, ``e1`` unless
given) where JAX's float32 gradient is computed op by op (``e``) and compiled (``j``, ``jax.jit`` with the
parameters and the data as arguments, as the samplers run it); the test first checks that the witnesses show the
claim (``nan``: a gradient is non-finite; ``big``: all finite and the largest above ``sup``), then that the
analyzer in float arithmetic refuses naming the site ``obs`` or certifies ``G >= max(sup, witnesses)``.

``sup`` is the real supremum per unit feature norm (analytic), except where a case says that the real program is
itself undefined at the witness (then the claim is ``nan`` and ``sup`` is not compared) or, in class F, that the
float model's own value (op by op) is meant: the FMA computes the REAL product, the model assumes a rounded one.
Domains with a single value (``y.values=v``) hold every record at ``v`` (``_data_for``).

XLA facts (CPU, jax 0.10.2, measured here with 200,000 to 2,000,000 float32 arguments):

* ``y / c`` by a constant is compiled as ``y * RN(1/c)`` (under ``jit`` always; op by op for arrays of more than
  one element), which is not the correctly rounded quotient: ``1.999999 / 3`` is ``0.6666664`` where
  ``RN(1.999999 / 3) = 0.6666663``.
* ``(y * 0.1) * 10`` is compiled as ``y`` (products by constants folded), so the rounded intermediate the model
  puts on the float grid is never computed.
* With XLA CPU's default flags a product feeding a sum is contracted into a fused multiply-add (``y*y - c`` is
  ``fma(y, y, -c)``, the REAL product); with the suite's cheap flags (tests/conftest.py) it is not. The cases in
  ``DEFAULT_CODEGEN`` compute their witnesses in a subprocess with the default flags.
* XLA CPU flushes subnormal numbers to zero, inputs included (``log(1e-39)`` is ``-inf``); the analysis flushes
  literals and results (``_in_float_range``, ``_defined_point``), not the record's values.
* ``(y + C) * 1.0 - C``, ``reshape``, an inner ``jax.jit`` and a ``custom_jvp`` around ``y + C`` are all folded to
  ``y`` under ``jit`` (the chain of additions the model follows is cut there), but a sum is never put on the grid
  (its box is widened by ``gamma``, not rounded), so those stay refused.
* XLA's functions stay inside ``floats.ULPS`` over dense grids of their extreme ranges (exp near +-88, log near 1
  and the smallest normal, log1p near -1, expm1, tanh, logistic down to -87, atan, asinh, sinh, acosh, atanh,
  asin, acos, erf, erfc to 9, erf_inv near +-1 (0.76 of the allowance, the closest), exp2, cbrt, rsqrt,
  digamma), with both flag sets: no case of function error beyond the table was found; ``exp(a) * exp(b)``,
  compiled as ``exp(a + b)`` (65 u off at a = 40), stays inside the model's allowance for the rounded ``a + b``.

Cases (39), run against commit e7c24f7 (2026-11-29): 10 UNSOUND in float arithmetic and 29 sound (refused, or
certified with G above every witness). The 10 (classes D, M, F, Z below) are sound since (2026-11-28, the same
session): a chain of products and quotients errs by gamma_{2n} relative in any grouping (D, M), a product of two
factors keeps its exact value in its box (F), and a float record nearer 0 than the smallest normal number reaches 0
(Z); the chain of additions is also followed through reshapes, slices and broadcasts, and ``exp(a) exp(b)`` gets
the error of XLA's ``exp(a + b)`` (two cases that those fixes had broken on the way). ``_xf`` marks none now:

* D  a division by a constant compiled as a product by the rounded reciprocal (the model rounds the quotient
  correctly): 3 unsound.
* M  products by constants regrouped by XLA (``(y * 0.1) * 10`` is ``y``; ``(y + B) * 1.0 - B`` and
  ``((y + B) * 2) * 0.5 - B`` are ``y`` under jit, refused): 1 unsound, 2 sound.
* F  fused multiply-add (default flags): ``y * y - RN(y^2)`` is the product's rounding error, not 0: 2 unsound.
* Z  subnormal records flushed to zero (``log y``, ``y > 0``, ``log(1e30 y)`` at ``y = 1e-39``): 4 unsound,
  1 sound (``y / y``, refused).
* K  the add chain cut by ``* 1.0`` (op by op), ``reshape``, an inner ``jax.jit``, a ``custom_jvp``; more than
  64 terms, a ``reduce_sum`` of a stack, ``x - x``, a power of two that underflows or overflows:
  0 unsound, 11 sound.
* I  ``is_finite`` of a value that overflows in float32 (``exp(r)``, ``3e38 y``): 0 unsound, 3 sound.
* U  underflow of a value positive in real arithmetic (``log sigmoid(r)``, ``log softplus(r)``, ``sqrt sigmoid``,
  ``log(e^r + e^-r)``): 0 unsound, 4 sound (refused).
* X  primitives taken as exact or with a function error (``nextafter`` into the subnormals, an ``int32``
  product that wraps, ``exp(a) exp(b)``, ``log(exp(y))``, ``erf_inv`` near 1, ``rem``, ``bfloat16`` and
  ``float16`` round trips): 0 unsound, 8 sound.

Platform-dependent (all measured on XLA CPU only; GPU untested): F needs XLA CPU's default codegen (FMA
contraction; the suite's cheap flags do not contract); D's reciprocal product holds under jit with both flag sets
and op by op for arrays of more than one element (a one-element array is divided correctly op by op); Z depends
on flush-to-zero. XLA GPU's SimplifyFPConversions (with ``xla_allow_excess_precision``, on by default) can remove
a ``float32 -> bfloat16 -> float32`` pair, a rounding the model assumes; on CPU the pair is kept (untested on GPU).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special as sp

from test_adversarial_rounding import DOMAIN, FAST_COMPILE_FLAGS, MODELS, NAN, NAN_E, NAN_J, BIG, _analyse_and_check, \
    _domain_data, _reg_norms
from test_switch_continuity import _data

pytestmark = pytest.mark.slow

L, S, f32 = jnp.log, jnp.sqrt, np.float32
sig = jax.nn.sigmoid
BIG_J = {"j": "big"}
D12 = ["X.norm=1", "y.min=1", "y.max=2"]
B = 2.0 ** 25 + 4                # float32 spacing 4 there
SUB = 1e-39                      # a float32 subnormal (the smallest normal is 1.18e-38)
DSUB = ["X.norm=1", f"y.min={SUB!r}", "y.max=1"]

# D: 1.999999 (its float32) / 3 is computed as 1.999999 * RN(1/3) = 0.6666664 (one float above RN(y / 3))
Y1 = float(f32(1.999999))
C3, C10 = float(f32(Y1) * f32(1 / 3)), float(f32(Y1) * f32(0.1))
DY1 = ["X.norm=1", "y.min=1", f"y.max={Y1!r}"]
SUP3, SUP10 = float(-np.log(C3 - Y1 / 3)), float(-np.log(C10 - Y1 / 10))
# M: RN(10 RN(0.1 y)) = y + 1 float at y = 1.250001 (its float32); XLA computes (y * 0.1) * 10 as y
M0 = float(f32(1.250001))
# F: RN(y^2) > y^2 at y = 1.0002445: y * y - RN(y^2) is 0 rounded twice, -5.9e-8 in one fused multiply-add
F0 = float(f32(1.0002445))
FC = float(f32(np.float64(f32(F0)) ** 2))
DF0 = ["X.norm=1", f"y.values={F0!r}"]


def _xf(cls, why):
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"UNSOUND in float arithmetic ({cls}): {why}")


def _long_chain(y):
    s = y
    for i in range(80):
        s = s + (B if i % 2 == 0 else -B)
    return s


@jax.custom_jvp
def _add_b(a):
    return a + B


_add_b.defjvp(lambda p, t: (_add_b(p[0]), t[0]))


def _exp_exp_case():
    """exp(y) exp(y + 0.2) at the y in [40, 40.1] where XLA's exp(2y + 0.2) is furthest below the real product
    (64.8 u), and a constant 60 u below that product."""
    y0 = 40.007225036621094
    P = np.exp(np.float64(f32(y0)) + np.float64(f32(y0) + f32(0.2)))
    lo = P * (1 - 60 * 2.0 ** -24)
    c = float(f32(lo))
    while c > lo:
        c = float(np.nextafter(f32(c), f32(0)))
    return y0, c


EXY, EXC = _exp_exp_case()

# (name, kind, loss, domain, witnesses, claims, sup per unit |x|, mark)
CASES = [
    # ----------------------------------------------------------------- D: division by a constant
    ("D r log(C - |y / 3|)", "reg", lambda r, y: r * L(C3 - jnp.abs(y / 3.0)), DY1, [(0.0, Y1)], NAN_J, SUP3,
     None),
    ("D r log(C - |y / 10|)", "reg", lambda r, y: r * L(C10 - jnp.abs(y / 10.0)), DY1, [(0.0, Y1)], NAN_J, SUP10,
     None),
    ("D r log(C - y / 3) [default codegen]", "reg", lambda r, y: r * L(C3 - y / 3.0), DY1, [(0.0, Y1)], BIG_J, SUP3,
     None),
    # ----------------------------------------------------------------- M: products by constants regrouped
    ("M r log((y 0.1) 10 - y0) [jit]", "reg", lambda r, y: r * L((y * 0.1) * 10.0 - M0),
     ["X.norm=1", f"y.min={M0!r}", "y.max=1.75"], [(0.0, M0)], NAN_J, 0.0,
     None),
    ("M r log(((y + B) 1.0 - B) - 3) [jit]", "reg", lambda r, y: r * L(((y + B) * 1.0 - B) - 3.0),
     ["X.norm=1", "y.min=2.5", "y.max=3.5"], [(0.0, 2.5)], NAN_J, 0.0, None),
    ("M r log((((y + B) 2) 0.5 - B) - 3) [jit]", "reg", lambda r, y: r * L((((y + B) * 2.0) * 0.5 - B) - 3.0),
     ["X.norm=1", "y.min=2.5", "y.max=3.5"], [(0.0, 2.5)], NAN_J, 0.0, None),
    # ----------------------------------------------------------------- F: fused multiply-add (default flags)
    ("F r 1e8 (y y - RN(y0^2)) [default codegen]", "reg", lambda r, y: r * 1e8 * (y * y - FC), DF0, [(0.0, F0)],
     BIG_J, 0.0, None),
    ("F r sqrt(y y - RN(y0^2)) [default codegen]", "reg", lambda r, y: r * S(y * y - FC), DF0, [(0.0, F0)],
     NAN_J, 0.0, None),
    # ----------------------------------------------------------------- Z: subnormal records flushed to zero
    ("Z r log y, y >= 1e-39", "reg", lambda r, y: r * L(y), DSUB, [(0.0, SUB)], NAN, float(-np.log(SUB)),
     None),
    ("Z r log(2^100 y), y >= 1e-39", "reg", lambda r, y: r * L(y * 2.0 ** 100), DSUB, [(0.0, SUB)], NAN,
     float(-np.log(SUB * 2.0 ** 100)), None),
    ("Z r log(1e30 y), y >= 1e-39", "reg", lambda r, y: r * L(y * 1e30), DSUB, [(0.0, SUB)], NAN,
     float(-np.log(SUB * 1e30)), None),
    ("Z where(y > 0, r, 1e3 r), y >= 1e-39", "reg", lambda r, y: jnp.where(y > 0, r, 1e3 * r), DSUB, [(0.0, SUB)],
     BIG, 1.0, None),
    ("Z r (y / y), y >= 1e-39", "reg", lambda r, y: r * (y / y), DSUB, [(0.0, SUB)], NAN, 1.0, None),
    # ----------------------------------------------------------------- K: the chain of additions cut
    ("K r log(((y + B) 1.0 - B) - 0.5) [op by op]", "reg", lambda r, y: r * L(((y + B) * 1.0 - B) - 0.5), D12,
     [(0.0, 1.0)], NAN_E, 0.0, None),
    ("K r log(reshape(y + B) - B - 3) [jit]", "reg", lambda r, y: r * L((((y + B)[:, None] - B)[:, 0]) - 3.0),
     ["X.norm=1", "y.min=2.5", "y.max=3.5"], [(0.0, 2.5)], NAN_J, 0.0, None),
    ("K r log(jit(y + B) - B - 3) [jit]", "reg", lambda r, y: r * L((jax.jit(lambda a: a + B)(y) - B) - 3.0),
     ["X.norm=1", "y.min=2.5", "y.max=3.5"], [(0.0, 2.5)], NAN_J, 0.0, None),
    ("K r log(custom_jvp(y + B) - B - 3) [jit]", "reg", lambda r, y: r * L((_add_b(y) - B) - 3.0),
     ["X.norm=1", "y.min=2.5", "y.max=3.5"], [(0.0, 2.5)], NAN_J, 0.0, None),
    ("K r log(((y + B) - B) - 3) [jit]", "reg", lambda r, y: r * L(((y + B) - B) - 3.0),
     ["X.norm=1", "y.min=2.5", "y.max=3.5"], [(0.0, 2.5)], NAN_J, 0.0, None),
    ("K r log(80-term chain +-B - 0.5) [op by op]", "reg", lambda r, y: r * L(_long_chain(y) - 0.5), D12,
     [(0.0, 1.0)], NAN_E, 0.0, None),
    ("K r log(sum([y + B, -B]) - 0.5)", "reg", lambda r, y: r * L(jnp.sum(jnp.stack([y + B, -B + 0 * y]), 0) - 0.5),
     D12, [(0.0, 1.0)], NAN, 0.0, None),
    ("K r log((y y - y y) + 0.5)", "reg", lambda r, y: r * L((y * y - y * y) + 0.5), D12, [(0.0, 1.0), (0.0, 2.0)],
     BIG, 0.0, None),
    ("K r log((2^-130 y) 2^130) [op by op]", "reg", lambda r, y: r * L((y * 2.0 ** -130) * 2.0 ** 130), D12,
     [(0.0, 1.0)], NAN_E, float(np.log(2.0)), None),
    ("K r log((2^127 y) 2^-127) [op by op]", "reg", lambda r, y: r * L((y * 2.0 ** 127) * 2.0 ** -127), D12,
     [(0.0, 2.0)], NAN_E, float(np.log(2.0)), None),
    ("K r log(1 + 2^-149 y)", "reg", lambda r, y: r * L(1.0 + y * 2.0 ** -149), D12, [(0.0, 1.0)],
     {}, 0.0, None),
    # ----------------------------------------------------------------- I: is_finite of an overflow
    ("I where(isfinite(exp r), r, 100 r)", "reg", lambda r, y: jnp.where(jnp.isfinite(jnp.exp(r)), r, 100 * r),
     DOMAIN, [(100.0, 1.0)], BIG, 1.0, None),
    ("I where(isfinite(3e38 y), r, 100 r)", "reg", lambda r, y: jnp.where(jnp.isfinite(y * 3e38), r, 100 * r), D12,
     [(0.0, 2.0)], BIG, 1.0, None),
    ("I where(isfinite(3e38 t + 3e38 t), r, 100 r)", "reg", lambda r, y: jnp.where(jnp.isfinite(
        3e38 * jnp.tanh(r) + 3e38 * jnp.tanh(r)), r, 100 * r), DOMAIN, [(5.0, 1.0)], BIG, 1.0, None),
    # ----------------------------------------------------------------- U: underflow of a positive value
    ("U log sig(r)", "reg", lambda r, y: L(sig(r)), DOMAIN, [(-104.0, 1.0)], NAN, 1.0, None),
    ("U sqrt sig(r)", "reg", lambda r, y: S(sig(r)), DOMAIN, [(-104.0, 1.0)], NAN, 0.25, None),
    ("U log softplus(r)", "reg", lambda r, y: L(jax.nn.softplus(r)), DOMAIN, [(-104.0, 1.0)], NAN, 1.0, None),
    ("U log(exp r + exp -r)", "reg", lambda r, y: L(jnp.exp(r) + jnp.exp(-r)), DOMAIN, [(100.0, 1.0)], NAN, 1.0,
     None),
    # ----------------------------------------------------------------- X: exact primitives, function errors
    ("X r log(nextafter(y, 2))", "reg", lambda r, y: r * L(jnp.nextafter(y, 2.0)), ["X.norm=1", "y.min=0", "y.max=1"],
     [(0.0, 0.0)], NAN, 0.0, None),
    ("X r log(int32(1e5 y) 100000)", "reg", lambda r, y: r * L(((y * 1e5).astype(jnp.int32) * 100000).astype(
        jnp.float32)), ["X.norm=1", "y.min=0.3", "y.max=0.5"], [(0.0, 0.3)], NAN, 0.0, None),
    ("X r log(1e-30 (exp(y) exp(y + 0.2) - c)) [jit]", "reg", lambda r, y: r * L(
        1e-30 * (jnp.exp(y) * jnp.exp(y + 0.2) - EXC)), ["X.norm=1", f"y.values={EXY!r}"], [(0.0, EXY)], NAN_J, 0.0,
     None),
    ("X r log(log(exp y))", "reg", lambda r, y: r * L(L(jnp.exp(y))), D12, [(0.0, 2.0)], {}, float(np.log(2.0)),
     None),
    ("X r erfinv(1 - 1.7e-4 y)", "reg", lambda r, y: r * jax.scipy.special.erfinv(1.0 - 1.7e-4 * y), D12,
     [(0.0, 1.0)], {}, float(sp.erfinv(1 - 1.7e-4)), None),
    ("X r rem(1e4 y, 0.1) 10", "reg", lambda r, y: r * 10 * jax.lax.rem(y * 1e4, f32(0.1)), D12, [(0.0, 1.3)], {},
     0.99, None),
    ("X r (bfloat16(1 + 1e-3 y) - 1) 1e3", "reg", lambda r, y: r * 1e3 * (
        (1.0 + 1e-3 * y).astype(jnp.bfloat16).astype(jnp.float32) - 1.0), D12, [(0.0, 2.0)], {}, 0.0, None),
    ("X r log(float16(1 + 1e-4 y) - 1)", "reg", lambda r, y: r * L(
        (1.0 + 1e-4 * y).astype(jnp.float16).astype(jnp.float32) - 1.0), D12, [(0.0, 1.0)], NAN, 0.0, None),
]

DEFAULT_CODEGEN = {"D r log(C - y / 3) [default codegen]", "F r 1e8 (y y - RN(y0^2)) [default codegen]",
                   "F r sqrt(y y - RN(y0^2)) [default codegen]"}


def _data_for(dom):
    """The records of a domain: ``y.values=v`` (one value) holds every record at v."""
    bounds = dict(s.split("=") for s in dom)
    if "y.values" in bounds:
        data = _data()
        v = np.asarray([float(t) for t in bounds["y.values"].split(",")], np.float32)
        data["y"] = np.resize(v, data["y"].shape).astype(np.float32)
        return data
    return _domain_data(dom)


def _norms_here(name):
    [(kind, loss, wits)] = [(k, f, w) for n, k, f, d, w, c, s, m in CASES if n == name]
    return [_reg_norms(kind, loss, w) for w in wits]


def _witness_norms(name):
    flags = os.environ.get("XLA_FLAGS", "").split()
    if name not in DEFAULT_CODEGEN or not FAST_COMPILE_FLAGS & set(flags):
        return _norms_here(name)
    here = Path(__file__).resolve().parent
    env = dict(os.environ, XLA_FLAGS=" ".join(f for f in flags if f not in FAST_COMPILE_FLAGS), JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([str(here), str(here.parents[1]), os.environ.get("PYTHONPATH", "")]))
    code = f"import json, test_adversarial_float_mode as m; print(json.dumps(m._norms_here({name!r})))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name,kind,loss,dom,wits,claims,sup", [
    pytest.param(n, k, f, d, w, c, s, id=n, marks=[m] if m else []) for n, k, f, d, w, c, s, m in CASES])
def test_float_mode(name, kind, loss, dom, wits, claims, sup):
    norms = _witness_norms(name)
    _analyse_and_check(MODELS[kind](loss), _data_for(dom), dom, norms, claims, sup, arithmetic="float")
