"""Model analyzer: NumPyro model + public data domain -> certified constants -> certificate report.

>>> from bayesdp.analysis import Domain, analyze, certify   # doctest: +SKIP
"""

from .analyze import Analysis, analyze
from .certify import MECHANISM_KEYS, CertifyReport, certify
from .domain import ArgDomain, Domain
from .facts import Constants, Fact, Unproven
from .families import LIKELIHOOD_RULES, PRIOR_RULES, LikelihoodRule, PriorFacts, likelihood_rule, prior_rule

__all__ = ["Analysis", "CertifyReport", "MECHANISM_KEYS", "certify", "ArgDomain", "Constants", "Domain", "Fact", "LIKELIHOOD_RULES", "LikelihoodRule",
           "PRIOR_RULES", "PriorFacts", "Unproven", "analyze", "likelihood_rule", "prior_rule"]
