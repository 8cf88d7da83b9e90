"""Private release: coupling sensitivity, secure Laplace noise, statistics, privacy budget ledger.

Flow (ARCHITECTURE.md): Lipschitz statistic -> coupling sensitivity -> secure Laplace noise -> ledger.
The entry point for the ``bayesdp release`` / ``bayesdp demo`` glue is
:func:`bayesdp.release.release.release_statistic`.
"""
