"""The budget layer: DP events, the :class:`Accountant` protocol, the in-memory :class:`PrivacyAccountant` and the
persistent :class:`Ledger` (docs/ledger.md)."""

from __future__ import annotations

import os
from typing import Any

from .accountant import Accountant, PrivacyAccountant
from .ledger import Ledger
from ..errors import BudgetError

__all__ = ["Accountant", "PrivacyAccountant", "Ledger", "as_accountant"]


def as_accountant(x: Any, budget: Any = None, budget_delta: Any = None, dataset: str | None = None) -> Accountant:
    """The accountant to charge: an :class:`Accountant` as is, a ledger path opened (created with ``budget``).

    Args:
        x: a :class:`PrivacyAccountant`, a :class:`Ledger` (any :class:`Accountant`), or a ledger path.
        budget: the budget's epsilon, to create the ledger at a path (checked against an existing one).
        budget_delta: the budget's delta.
        dataset: the dataset label of the ledger.

    Returns:
        The accountant.

    Raises:
        BudgetError: a path that cannot be opened as a ledger, or something that is neither.

    Examples:
        >>> acct = PrivacyAccountant(budget=1.0)
        >>> as_accountant(acct) is acct
        True
    """

    if isinstance(x, (str, os.PathLike)):
        return Ledger.open(x, budget=budget, budget_delta=budget_delta, dataset=dataset)
    if isinstance(x, Accountant):
        return x
    raise BudgetError(f"ledger = {x!r} is neither a ledger path nor an accountant; pass a path or "
                      "bayesdp.PrivacyAccountant(budget=...)")
