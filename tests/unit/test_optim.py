"""local_training/optim.py's in-place SGD and Adam steps give the functional step's bits, on every row and on a subset."""
import pytest
import torch

from fedcluster.local_training.optim import SGD, Adam, PartialUpdate, step_rows, take_state

SHAPES = {"w": (3, 5, 4), "b": (3, 5)}


def stacked(seed):
    gen = torch.Generator().manual_seed(seed)
    return {k: torch.randn(s, generator=gen) for k, s in SHAPES.items()}


def functional_steps(opt, params, state, grads, rows):
    """The reference: `update` on the chosen rows, written back by hand."""
    params = {k: v.clone() for k, v in params.items()}
    state = take_state(state, slice(None))
    for g in grads:
        new_p, new_s = opt.update({k: v[rows] for k, v in params.items()}, g, take_state(state, rows), None)
        for k in params:
            params[k][rows] = new_p[k]
        for name, sub in new_s.items():
            if isinstance(sub, dict):
                for k in sub:
                    state[name][k][rows] = sub[k]
            else:
                state[name][rows] = sub
    return params, state


def in_place_and_functional(opt, rows):
    """Three steps of `opt` on rows `rows` through step_rows (in place where it can), and the reference's
    result: (params, state, the reference's params, its state)."""
    params = stacked(0)
    state = opt.init(params)
    grads = [{k: v[rows] for k, v in stacked(s).items()} for s in (1, 2, 3)]
    want_p, want_s = functional_steps(opt, params, state, grads, rows)
    index = torch.tensor(rows)
    for g in grads:
        step_rows(opt, params, {k: v.clone() for k, v in g.items()}, state, index, all_rows=len(rows) == 3)
    return params, state, want_p, want_s


@pytest.mark.parametrize("rows", [[0, 1, 2], [0, 2]])
@pytest.mark.parametrize("momentum,weight_decay", [(0.0, 0.0), (0.9, 0.0), (0.0, 0.01), (0.9, 0.01)])
def test_in_place_step_gives_the_functional_bits(rows, momentum, weight_decay):
    opt = SGD(0.1, momentum=momentum, weight_decay=weight_decay)
    params, state, want_p, want_s = in_place_and_functional(opt, rows)
    for k in params:
        assert torch.equal(params[k], want_p[k])
        assert torch.equal(state["buf"][k], want_s["buf"][k])
    if rows == [0, 2]:   # the row that sat out kept its parameters
        assert torch.equal(params["w"][1], stacked(0)["w"][1])


@pytest.mark.parametrize("rows", [[0, 1, 2], [0, 2]])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adams_in_place_step_gives_the_functional_bits(rows, weight_decay):
    """Issue 56: Adam steps in place (no new parameters and moments per step), to the functional step's bits."""
    opt = Adam(0.01, weight_decay=weight_decay)
    params, state, want_p, want_s = in_place_and_functional(opt, rows)
    for k in params:
        assert torch.equal(params[k], want_p[k])
        assert torch.equal(state["m"][k], want_s["m"][k]) and torch.equal(state["v"][k], want_s["v"][k])
    assert torch.equal(state["step"], want_s["step"])


def test_partial_update_steps_in_place_only_its_parameters_and_adam_steps_in_place_too():
    opt = PartialUpdate(SGD(0.1, momentum=0.9), ["w"])
    params = stacked(0)
    state = opt.init(params)
    step_rows(opt, params, stacked(1), state, torch.arange(3), all_rows=True)
    assert not torch.equal(params["w"], stacked(0)["w"])
    assert torch.equal(params["b"], stacked(0)["b"]) and not state["buf"]["b"].any()
    assert opt.in_place and PartialUpdate(Adam(0.1), ["w"]).in_place   # Adam: in place since issue 56
    adam, params = Adam(0.1), stacked(0)
    adam_state = adam.init(params)
    step_rows(adam, params, stacked(1), adam_state, torch.arange(3), all_rows=True)
    assert not torch.equal(params["w"], stacked(0)["w"]) and torch.equal(adam_state["step"], torch.ones(3))
