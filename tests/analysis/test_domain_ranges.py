"""Issue 23: integer ranges in the domain (``hits.values=0..45``, ``values(range(46))``) and a response whose
declared range equals the support ("[0,45] exceeds [0,45]": the box was widened by the float32 tolerance even
where float32 holds the endpoint exactly)."""

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesdp.analysis import Domain, analyze
from bayesdp.analysis.domain import values
from bayesdp.analysis.structure.program import domain_box
from bayesdp.errors import DomainError


def pooled(at_bats, hits=None):
    # baseball.py's fully pooled model, written with the logit of the batting average
    a = numpyro.sample("a", dist.Normal(0, 1))
    with numpyro.plate("players", at_bats.shape[0]):
        numpyro.sample("obs", dist.Binomial(at_bats, logits=a), obs=hits)


SHAPES = {"at_bats": (), "hits": ()}


def test_range_syntax_is_the_integers_both_ends_included():
    d = Domain.parse(["hits.values=0..45"]).get("hits")
    assert d.values == tuple(float(v) for v in range(46))
    assert Domain.parse(["y.values=-1,0..2,7"]).get("y").values == (-1.0, 0.0, 1.0, 2.0, 7.0)
    assert Domain(hits=values(range(46))).get("hits").values == d.values
    assert Domain(hits=values(np.arange(3), 9)).get("hits").values == (0.0, 1.0, 2.0, 9.0)
    # describe() writes runs back as ranges, and parses back to the same domain
    assert Domain.parse(["y.values=-1,0..2,7"]).describe() == "y.values=-1..2,7"
    assert Domain.parse(["y.values=0,1"]).describe() == "y.values=0,1"
    assert Domain.parse([Domain.parse(["h.values=0..45,50"]).describe()]).get("h").values == \
        Domain.parse(["h.values=0..45,50"]).get("h").values


@pytest.mark.parametrize("word,words", [
    ("h.values=0.5..3", "integers A <= B"),
    ("h.values=5..3", "is empty"),
    ("h.values=0..1..2", "integers A <= B"),
    ("h.values=0..", "not a number"),
    ("h.values=0..200000", "declare a box instead: h.min=0 h.max=200000"),
])
def test_malformed_ranges_are_refused_by_name(word, words):
    with pytest.raises(DomainError, match=words):
        Domain.parse([word])


@pytest.mark.parametrize("spec", [
    ["hits.values=0..45", "at_bats.values=45"],
    ["hits.min=0", "hits.max=45", "at_bats.values=45"],
    ["hits.values=0..45", "at_bats.values=1..45"],
])
def test_pooled_binomial_with_the_support_as_domain_certifies_with_the_exact_constants(spec):
    # Binomial(n, sigmoid(a)): d/da log p(y) = y - n sigmoid(a); sup over a in R, 0 <= y <= n <= 45 is 45
    # (y = n = 45, a -> -inf); replace-one: |(y - n s) - (y' - n' s)| <= 45 at n = n' = 45, y = 45, y' = 0
    an = analyze(pooled, domain=Domain.parse(spec), data_size=18, record_shapes=SHAPES)
    assert an.constants.record_grad_bound == 45.0
    assert an.constants.record_grad_diff == 45.0


def test_a_response_range_beyond_the_support_is_still_refused():
    # 46 > 45 = total_count: a record (n = 45, y = 46) is outside the Binomial support
    with pytest.raises(DomainError, match=r"\[0, 46\] exceeds"):
        analyze(pooled, domain=Domain.parse(["hits.values=0..46", "at_bats.values=45"]), data_size=18,
                record_shapes=SHAPES)
    with pytest.raises(DomainError, match="exceeds"):
        analyze(pooled, domain=Domain.parse(["hits.min=0", "hits.max=45.5", "at_bats.values=45"]), data_size=18,
                record_shapes=SHAPES)


def test_box_endpoints_float32_cannot_hold_are_still_widened():
    # 0.1 is not a float32 number: a float64 entry <= 0.1 can round UP to float32(0.1) > 0.1
    lo, hi = domain_box(Domain.parse(["x.min=-0.1", "x.max=0.1"]), "x", (1,))
    assert hi[0] > 0.1 and lo[0] < -0.1 and hi[0] >= float(np.float32(0.1))
    x64 = np.nextafter(0.1, 0.0)                 # accepted by the declared box, its float32 cast is above 0.1
    assert x64 <= 0.1 and float(np.float32(x64)) > 0.1 and float(np.float32(x64)) <= hi[0]
    # 45 and -2.5 are float32 numbers: no widening (rounding to float32 is monotone and fixes them)
    lo, hi = domain_box(Domain.parse(["x.min=-2.5", "x.max=45"]), "x", (1,))
    assert (lo[0], hi[0]) == (-2.5, 45.0)
    xs = np.nextafter(45.0, 0.0) - np.linspace(0, 1e-5, 1000)
    assert float(np.max(xs.astype(np.float32))) <= 45.0


def test_data_outside_the_range_is_refused_with_the_record():
    with pytest.raises(DomainError, match=r"hits\[2\] contains 46"):
        analyze(pooled, {"at_bats": np.full(4, 45.0), "hits": np.array([0.0, 3, 46, 5])},
                Domain.parse(["hits.values=0..45", "at_bats.values=45"]))
