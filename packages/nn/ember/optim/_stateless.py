"""``swap_in_optimizer_params_and_state`` (torch.optim's): run the optimizer, for the duration
of a ``with`` block, on other parameter tensors and another state_dict-shaped state."""

from __future__ import annotations

import contextlib
from collections import defaultdict

__all__ = ["swap_in_optimizer_params_and_state"]


def _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state):
    if not optimizer.state:
        raise RuntimeError("swap_in_optimizer_params_and_state requires initialized optimizer "
                           "state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError("swap_in_optimizer_params_and_state requires a DCP-style optimizer "
                           "state_dict.")
    state = swapin_optim_state.get("state")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(state, dict):
        raise RuntimeError("swap_in_optimizer_params_and_state requires "
                           "swapin_optim_state['state'] to be a dict.")
    if not isinstance(groups, list) or len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swap_in_optimizer_params_and_state requires "
                           "swapin_optim_state['param_groups'] to match "
                           "optimizer.param_groups.")
    flat = list(swapin_parameters.values())
    offset, seen, infos = 0, set(), []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = list(swapin_group.get("params", []))
        if len(ids) != len(group["params"]):
            raise RuntimeError(f"swap_in_optimizer_params_and_state: param_groups[{idx}] has "
                               f"{len(ids)} params, the optimizer's group "
                               f"{len(group['params'])}.")
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError("swap_in_optimizer_params_and_state requires the explicit "
                               "parameter state to match optimizer.param_groups ordering.")
        infos.append((group, swapin_group, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError("swap_in_optimizer_params_and_state requires "
                           "swapin_optim_state['state'] to be keyed only by packed parameter "
                           f"ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Inside the block, ``optimizer``'s groups hold ``swapin_parameters`` (a dict, in the
    order of the optimizer's parameters) and the hyper-parameters of
    ``swapin_optim_state['param_groups']``, and its state is ``swapin_optim_state['state']``
    re-keyed by those tensors (in-place updates of its tensors show through); everything is
    restored on exit."""
    state, infos = _prepare_swap_in(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live_group, swapin_group, params in infos:
            live_group["params"] = params
            for key, value in swapin_group.items():
                if key != "params":
                    live_group[key] = value
            for p, pid in zip(params, swapin_group["params"]):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
