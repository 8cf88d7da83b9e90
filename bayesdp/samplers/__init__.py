"""ULA and SGLD for NumPyro models, run exactly as certified (issue #4).

* :mod:`.potential`  the model's potential in the unconstrained space, split into prior and per-record parts;
* :mod:`.gradients`  full-batch / minibatch (fixed size, without replacement) / clipped gradient estimators;
* :mod:`.kernels`    BlackJAX-style ``init`` / ``build_kernel`` on NamedTuple states;
* :mod:`.driver`     :class:`Sampler` (NumPyro vocabulary, certificate attached, ArviZ output);
* :mod:`.sharding`   chains and records across devices.
"""

from .driver import DivergenceError, Sampler
from .gradients import clip_rows, sample_without_replacement
from .kernels import LangevinState, init, sgld, ula
from .potential import ModelPotential, validate_data

__all__ = ["Sampler", "DivergenceError", "ModelPotential", "validate_data", "LangevinState", "init", "ula", "sgld",
           "clip_rows", "sample_without_replacement"]
