"""ember.optim: optimizers with param groups and state_dict, and ``lr_scheduler``.

SGD, Adam and AdamW update through fused core kernels (one call per parameter group and step,
parallel over all elements); the others compose ember in-place ops per parameter.
"""

from . import lr_scheduler
from ._composed import Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop
from .adam import Adam, AdamW
from .lbfgs import LBFGS
from .optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "LBFGS", "lr_scheduler", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]
