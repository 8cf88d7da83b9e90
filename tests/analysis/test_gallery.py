"""docs/gallery.md, executed (slow tier): every model block runs through the analyzer with the domain declared on
its first line; each "as written" message and each certified constant the page states is checked here."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.errors import ModelError

pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parents[2] / "docs" / "gallery.md"
RNG = np.random.default_rng(2023)
m = 24


def _blocks():
    text = PAGE.read_text()
    ns: dict = {}
    domains = {}
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        exec(compile(block, str(PAGE), "exec"), ns)
        d = re.match(r"# domain: (.*)\n", block)
        f = re.search(r"^def (\w+)\(", block, flags=re.M)
        if d and f:
            domains[f.group(1)] = d.group(1).split()
    return ns, domains


NS, DOMAINS = _blocks()
X = RNG.standard_normal((m, 2))
X /= np.linalg.norm(X, axis=1, keepdims=True) * 1.01
AB = RNG.integers(1, 46, size=m).astype(float)
SERIES = np.clip(RNG.standard_normal(m), -3, 3)
DATA = {
    "logreg_vectorised": {"X": X, "y": (np.arange(m) % 2).astype(float)},
    "baseball_pooled": {"at_bats": AB, "hits": np.floor(AB / 3)},
    "covtype_indexed": {"X": X, "y": (np.arange(m) % 2).astype(float)},
    "linreg": {"X": X, "y": RNG.uniform(-3, 3, m)},
    "robust_latent": {"X": X, "y": RNG.uniform(-3, 3, m)},
    "negbin_latent": {"X": X, "y": (np.arange(m) % 21).astype(float)},
    "ordinal": {"X": X, "y": np.arange(m) % 4},
    "gp_exact": {"X": X, "y": RNG.uniform(-3, 3, m)},
    "ar2": {"y": SERIES},
    "poisson_glm": {"X": X, "y": (np.arange(m) % 6).astype(float)},
}
DATA.update({"baseball_pooled_logit": DATA["baseball_pooled"], "linreg_student": DATA["linreg"],
             "robust_floor": DATA["robust_latent"], "negbin": DATA["negbin_latent"], "gp_basis": DATA["gp_exact"],
             "ar2_lagged": {"lags": np.stack([SERIES[1:-1], SERIES[:-2]], axis=1), "y": SERIES[2:]},
             "poisson_clipped": DATA["poisson_glm"], "logreg_factor_sum": DATA["logreg_vectorised"],
             "zip_glm": DATA["poisson_glm"], "zip_clipped": DATA["poisson_glm"],
             "stacked_columns": {"age": RNG.uniform(-1, 1, m), "dose": RNG.uniform(-1, 1, m),
                                 "y": (np.arange(m) % 2).astype(float)},
             "zip_beta_gate": DATA["poisson_glm"],
             "huber_jump": DATA["linreg"], "huber": DATA["linreg"]})
R = Domain.parse(["X.norm=1"]).get("X").certified_norm

# name -> (expected record_grad_bound, relative tolerance) for the certified ones (the page's numbers)
# robust_floor (df = 4, s0 = 0.5): the supremum is at least the limit u -> -inf, (df+1)/(2 s0 sqrt(df)) R = 2.5 R
# (the loc score at |r| = s0 sqrt(df)); the joint bound over the residual and the scale reaches it
CERTIFIED = {
    "logreg_vectorised": (math.sqrt(R * R + 1), 1e-9), "baseball_pooled_logit": (45.0, 1e-6),
    "baseball_pooled": (45.0, 1e-6),
    "covtype_indexed": (R, 1e-9), "linreg_student": (1.25 * R, 1e-9), "robust_floor": (2.5 * R, 1e-6),
    "negbin": (20.0 * R, 1e-6), "ordinal": (R, 1e-9), "gp_basis": (1.25, 1e-6),
    "ar2_lagged": (1.25 * 3 * math.sqrt(2), 1e-6), "poisson_clipped": (math.exp(3.0) * R, 1e-9),
    "logreg_factor_sum": (R, 1e-9), "zip_clipped": (max(math.exp(3.0) * R, math.sqrt(((math.exp(3.0) - 1) * R) ** 2 + 1.0)), 1e-9),
    "stacked_columns": (math.sqrt(3.0), 1e-12),
    "huber": (float(np.float32(1.345)) * R, 1e-9),
    "zip_beta_gate": (max(math.exp(3.0) * R, math.sqrt(((math.exp(3.0) - 1) * R) ** 2 + 1.0)), 1e-9),
}
# name -> phrases of the refusal the page quotes
REFUSED = {
    "linreg": ["grows linearly in theta as |loc| -> inf", "1/scale^2 as scale -> 0", "dist.StudentT(4.0, loc, SCALE)"],
    "robust_latent": ["grows like 1/scale as scale -> 0"],
    "negbin_latent": ["concentration"],
    "gp_exact": ["a matrix over the records couples them", "HSGP"],
    "ar2": ["shifts the records by position", "lagged-regression form"],
    "poisson_glm": ["grows like rate = exp(eta)", "jnp.exp(jnp.clip(eta, -B, B))"],
    "zip_glm": ["its rate is unbounded over theta and the domain", "jnp.exp(jnp.clip(eta, lo, hi))"],
    "huber_jump": ["`le at", "a jnp.where chosen by theta is proven continuous only when its two sides",
                   "equal in exact arithmetic at the threshold"],
}


def _analyze(name):
    return analyze(NS[name], DATA[name], Domain.parse(DOMAINS[name]))


def test_every_model_on_the_page_is_checked():
    assert set(DOMAINS) == set(DATA) == set(CERTIFIED) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(CERTIFIED))
def test_certified_constants(name):
    want, rel = CERTIFIED[name]
    c = _analyze(name).constants
    assert c.record_grad_bound == pytest.approx(want, rel=rel) and c.record_grad_bound >= want * (1 - 1e-12)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_say_what_the_page_quotes(name):
    try:
        msg = _analyze(name).first_unproven("per-record gradient bound")
    except ModelError as exc:
        msg = str(exc)
    assert msg is not None
    for phrase in REFUSED[name]:
        assert phrase in msg, (name, phrase)


def test_baseball_as_written_has_the_logit_forms_constants_but_no_smoothness():
    # 0 + 1 * clip(sigmoid(u)) is clip(sigmoid(u)): the logits rule with the clip's weight; the clip is a kink
    c, c_logit = _analyze("baseball_pooled").constants, _analyze("baseball_pooled_logit").constants
    assert c.record_grad_diff == c_logit.record_grad_diff == pytest.approx(45.0, rel=1e-6)
    assert c.record_smoothness is None and c_logit.record_smoothness == pytest.approx(45.0 / 4, rel=1e-6)
