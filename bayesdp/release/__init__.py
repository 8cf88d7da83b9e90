"""Private release: coupling sensitivity, secure Laplace noise, statistics, privacy budget ledger.

Flow (ARCHITECTURE.md): Lipschitz statistic -> coupling sensitivity -> secure Laplace noise -> ledger.

``bayesdp.release`` is both this package and the public function :func:`bayesdp.api.release`
(``bayesdp.release(mcmc, statistic="mean", epsilon=1.0, accountant=acct)``): calling the package calls the
function, and its modules (``bayesdp.release.ledger``, ...) stay importable as usual.
"""

import sys
import types


class _CallableModule(types.ModuleType):
    """The package, callable as :func:`bayesdp.api.release`."""

    def __call__(self, *args, **kwargs):
        from ..api import release

        return release(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
