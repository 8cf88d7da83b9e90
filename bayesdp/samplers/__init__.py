"""ULA and SGLD for NumPyro models, run exactly as certified (issue #4).

* :mod:`.potential`  the model's potential in the unconstrained space, split into prior and per-record parts;
* :mod:`.gradients`  full-batch / minibatch (fixed size, without replacement) / clipped gradient estimators;
* :mod:`.minibatch`  uniform subsets of fixed size in O(s log s) work (Floyd's algorithm, resolved in parallel);
* :mod:`.glm`        the batched Bernoulli-GLM gradient and its data layout per backend;
* :mod:`.kernels`    BlackJAX-style ``init`` / ``build_kernel`` on NamedTuple states;
* :mod:`.driver`     :class:`Sampler` (NumPyro vocabulary, certificate attached, ArviZ output);
* :mod:`.sharding`   chains and records across devices and processes (``jax.distributed``).
"""

from .driver import DivergenceError, Sampler
from .gradients import clip_rows
from .kernels import LangevinState, init, sgld, ula
from .minibatch import batch_indices, sample_without_replacement
from .potential import ModelPotential, aligned_empty, validate_data

__all__ = ["Sampler", "DivergenceError", "ModelPotential", "validate_data", "LangevinState", "init", "ula", "sgld",
           "clip_rows", "sample_without_replacement", "batch_indices", "aligned_empty"]
