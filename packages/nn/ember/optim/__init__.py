"""ember.optim: optimizers with param groups and state_dict, and ``lr_scheduler``.

SGD, Adam and AdamW update through fused core kernels (one call per parameter group and step,
parallel over all elements); the others compose ember in-place ops per parameter.
"""

from . import lr_scheduler, swa_utils
from ._adafactor import Adafactor
from ._composed import Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop
from ._muon import Muon
from ._stateless import swap_in_optimizer_params_and_state
from .adam import Adam, AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "LBFGS", "ASGD", "Rprop", "Adafactor", "SparseAdam", "Muon",
           "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]
