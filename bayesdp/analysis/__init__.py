"""Model analyzer: NumPyro model + public data domain -> certified constants -> certificate report.

Examples:
    >>> from bayesdp.analysis import Domain, analyze
    >>> from bayesdp.analysis.loading import load_model
    >>> model, _ = load_model("logistic")
    >>> analyze(model, domain=Domain.parse(["X.norm=1", "y.values=0,1"]), data_size=100, dim=2).constants.smoothness
    1.0
"""

from .analyze import Analysis, analyze
from .certify import MECHANISM_KEYS, CertifyReport, certify
from .domain import ArgDomain, Domain
from .facts import Constants, Fact, Unproven
from .structure.floats import arithmetic
from .families import LIKELIHOOD_RULES, PRIOR_RULES, LikelihoodRule, PriorFacts, likelihood_rule, prior_rule

__all__ = ["arithmetic", "Analysis", "CertifyReport", "MECHANISM_KEYS", "certify", "ArgDomain", "Constants", "Domain", "Fact", "LIKELIHOOD_RULES", "LikelihoodRule",
           "PRIOR_RULES", "PriorFacts", "Unproven", "analyze", "likelihood_rule", "prior_rule"]
