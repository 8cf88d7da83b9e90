"""The release methods, one module each, registered in this order (ties in the ``auto`` choice go to the first):
coupling (004 Proposition 3.7), path (Dong-Roth-Su), last draw (``final``), sample-and-aggregate
(Nissim-Raskhodnikova-Smith).  A new method is one module here implementing :class:`base.ReleaseMethod`.
"""

from . import coupling, path, final, aggregate  # noqa: F401,I001  (each registers itself, in this order)
from .base import registry

__all__ = ["registry"]
