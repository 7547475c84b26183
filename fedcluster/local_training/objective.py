"""A job's local objective, compiled once from its terms (local_training/terms.py):

    mean_{batch} [prod_w q_m(x)] loss(out_m(x), y) + sum_penalties P_m(w_m, features),

and, where a term rewrites the whole objective (`Term.wrap`: Per-FedAvg's meta step), that
term's objective built on this one. Every gradient formulation (local_training/gradient_modes.py)
differentiates the same compiled function, so they differ only in how rows are batched.

Training a subset of the parameters has one mechanism: the frozen ones are detached here
(the backward pass then stops where only frozen parameters lie below: FedPAC's head phase
differentiates the last layer only) and the optimizer steps the trainable ones only
(local_training/optim.py PartialUpdate)."""
from typing import Optional, Sequence

from torch.func import functional_call

from .losses import per_sample_loss
from .precision import autocast, full_precision
from .terms import Term


class Objective:
    """`objective(params, x, y, valid, data, buffers=None, model=None, penalties=True)` ->
    (the row's objective, its mean data loss). `valid` marks the batch's real samples; `data`
    holds each term's data of the row; `buffers` (not differentiated) are updated in place by
    batch norm in train mode; `model` is the module to call (a thread's own copy);
    penalties=False leaves the penalty terms out (a full-batch gradient of the data loss)."""

    def __init__(self, model, task: str, terms: Sequence, trainable: Optional[Sequence[str]] = None):
        self.model, self.task, self.terms = model, task, tuple(terms)
        self.keep = None if trainable is None else frozenset(trainable)
        self.features = any(t.reads_features for t in self.terms)
        wrapping = [type(t).__name__ for t in self.terms if type(t).wrap is not Term.wrap]
        if wrapping and any(t.per_sample for t in self.terms):
            raise ValueError(f"{wrapping} rewrites the objective over parts of a batch and cannot take "
                             "per-sample terms with it")
        fn = self.plain
        for term in self.terms:
            fn = term.wrap(fn)
        self.fn = fn

    def __call__(self, params, x, y, valid, data, buffers=None, model=None, penalties=True):
        if self.keep is not None:
            params = {k: v if k in self.keep else v.detach() for k, v in params.items()}
        return self.fn(params, x, y, valid, data, buffers, model, penalties)

    def plain(self, params, x, y, valid, data, buffers=None, model=None, penalties=True):
        with autocast():
            out = functional_call(model or self.model, {**params, **buffers} if buffers else params, (x,),
                                  {"with_features": True} if self.features else None)
        out, feats = out if self.features else (out, None)
        return self.from_outputs(params, out, feats, y, valid, data, penalties)

    @property
    def rows_at_once(self) -> bool:
        """Whether many rows' outputs may come from one call (`from_outputs`): no term rewrites the objective."""
        return self.fn == self.plain

    def from_outputs(self, params, out, feats, y, valid, data, penalties=True):
        """The row's objective and mean data loss from its model outputs (and the representation the last layer
        read, where a term reads features): what `plain` computes after its forward pass, also for outputs that
        many rows computed in one call (local_training/gradient_modes.py `grouped`, whose frozen parameters never
        require a gradient, as `__call__` detaches them here)."""
        terms = self.terms
        if self.features:
            feats = full_precision(feats)
        out = full_precision(out)
        for term, d in zip(terms, data):
            out = term.outputs(out, d)
        scaled = per_sample_loss(self.task, out, y) * valid
        for term, d in zip(terms, data):
            w = term.weights(d)
            if w is not None:
                scaled = scaled * w
        data_loss = scaled.sum() / valid.sum().clamp_min(1)
        total = data_loss
        if penalties:
            for term, d in zip(terms, data):
                p = term.penalty(params, d)
                if p is not None:
                    total = total + p
            if self.features:
                for term, d in zip(terms, data):
                    p = term.feature_penalty(feats, y, valid, d)
                    if p is not None:
                        total = total + p
        return total, data_loss
