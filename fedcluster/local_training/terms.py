"""Terms of the local objective. Each job row m (a client training one model) minimises

    mean_{batch} [prod_w q_m(x)] loss(out_m(x), y) + sum_penalties P_m(w_m),
    out_m(x) = f(x; w_m) (+ each output term's frozen logits),

and each ingredient is one small object holding its per-row data `data` ([M, ...]): indexed by
sample (`per_sample`: [M, Nmax, ...], the engines gather the batch's samples) or by row only.
The engines hand every term its row's slice of `data` inside the objective (under vmap in the
batched engine, one row at a time in the others), so a term works in every engine without
engine code of its own. A new ingredient (a control variate, a prototype pull, a distillation
target) is one more class here.

`concat` joins the same kind of term of several plans trained together (rows stacked; a plan
without the term gets its neutral value), so an algorithm can train several models per client
in one computation (Fed-CAM's two threads, ensemble members, FedEM's components)."""
from typing import List, Optional

import torch

from ..models.stacked import Stack


class Term:
    """One ingredient of the local objective (local_training/objective.py). Each hook has a neutral
    default, so a term overrides only what it changes."""
    per_sample = False
    data: torch.Tensor

    def outputs(self, out: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """The row's outputs after this term (default: unchanged)."""
        return out

    def weights(self, d: torch.Tensor) -> Optional[torch.Tensor]:
        """Per-sample loss weights of the batch (default: none)."""
        return None

    def penalty(self, params: Stack, d: torch.Tensor) -> Optional[torch.Tensor]:
        """A scalar added to the row's objective (default: none)."""
        return None

    def feature_penalty(self, feats: torch.Tensor, y, valid, d: torch.Tensor) -> Optional[torch.Tensor]:
        """A scalar added to the row's objective from the model's features of the batch
        (default: none; a term that overrides it makes the model return its features)."""
        return None

    @property
    def reads_features(self) -> bool:
        return type(self).feature_penalty is not Term.feature_penalty

    def wrap(self, objective):
        """The row's objective built on `objective` (default: `objective` itself). A term that
        rewrites the whole objective, such as a meta step, returns a function of the same
        signature: (params, x, y, valid, data, buffers, model, penalties) -> (total, data loss)."""
        return objective

    @classmethod
    def concat(cls, parts: List[Optional["Term"]], rows: List[int]) -> "Term":
        raise NotImplementedError


class Proximal(Term):
    """1/2 sum_r coeffs[m, r] ||w_m - refs_r||^2: FedProx (one reference, the global model,
    coeff mu), FedSoft's h_k (eq. 4: the S centers, coeff lambda u_ks), FeSEM's pull to the
    assigned center (eq. 13). `refs` [R] are shared by all rows; `data` = coeffs [M, R].

    Where every row pulls to at most one reference (FedProx, FeSEM, and plans trained together,
    whose coefficients are block-diagonal), the penalty reads only that reference: the distances
    to all R references cost M x R parameter vectors at once (Fed-CAM's FeSEM-CAM, 20 clients x
    2 models x 6 references of the FedAvg CNN: 1.24 of its 4.06 GiB peak, measured with memray),
    and the others only add exact zeros (coefficient 0), so the result is the same to the bit."""

    def __init__(self, refs: Stack, coeffs: torch.Tensor):
        self.refs, self.data = refs, coeffs
        self.one_each = bool(((coeffs != 0).sum(1) <= 1).all()) if coeffs.numel() else True

    @property
    def coeffs(self) -> torch.Tensor:
        return self.data

    def penalty(self, params, d):
        refs = self.refs
        if self.one_each:
            pick = d.argmax().unsqueeze(0)   # the row's reference (any, where its coefficients are all 0)
            d = d.index_select(0, pick)
            refs = {k: refs[k].index_select(0, pick) for k in params}
        sq = sum(((params[k].unsqueeze(0) - refs[k]) ** 2).flatten(1).sum(1) for k in params)
        return 0.5 * (d * sq).sum()

    @classmethod
    def concat(cls, parts, rows):
        """References side by side; coefficients block-diagonal (each plan's rows pull only to
        its own references)."""
        present = [p for p in parts if p is not None]
        refs = {k: torch.cat([p.refs[k] for p in present]) for k in present[0].refs}
        R = next(iter(refs.values())).shape[0]
        like = present[0].data
        coeffs = torch.zeros(sum(rows), R, dtype=like.dtype, device=like.device)
        row = col = 0
        for p, m in zip(parts, rows):
            if p is not None:
                r = p.data.shape[1]
                coeffs[row: row + m, col: col + r] = p.data
                col += r
            row += m
        return cls(refs, coeffs)


class FrozenOffset(Term):
    """Frozen logits added to the model's outputs, `data` [M, Nmax, C] (Fed-CAM eq. 1: the
    partner model's h(x; Theta_g) while training a cluster model, eq. 5; f(x; Theta_c(i)) while
    training the global one, eq. 8)."""
    per_sample = True

    def __init__(self, logits: torch.Tensor):
        self.data = logits

    def outputs(self, out, d):
        return out + d

    @classmethod
    def concat(cls, parts, rows):
        if any(p is None for p in parts):
            raise ValueError("concat_plans: either every plan has offsets or none")
        return cls(torch.cat([p.data for p in parts]))


class SampleWeights(Term):
    """Per-sample loss weights q_m(x), `data` [M, Nmax] (FedEM's posterior responsibilities of the
    component being trained, its M-step). The mean is still over the batch's samples."""
    per_sample = True

    def __init__(self, q: torch.Tensor):
        self.data = q

    def weights(self, d):
        return d

    @classmethod
    def concat(cls, parts, rows):
        like = next(p.data for p in parts if p is not None)
        return cls(torch.cat([p.data if p is not None else like.new_ones(m, like.shape[1])
                              for p, m in zip(parts, rows)]))


class PrototypePull(Term):
    """lam * the mean over the batch and the feature dimensions of ||r(x) - P_y||^2: FedProto's
    regulariser (Tan et al., AAAI 2022, eq. 4-5, PFLlib's clientproto.py: MSE to the global
    prototype of the sample's label; a sample whose class has no global prototype adds 0), and
    FedPAC's feature alignment. `prototypes` [C, D] and `have` [C] are shared by all rows;
    `data` = lam per row [M, 1]."""

    def __init__(self, prototypes: torch.Tensor, have: torch.Tensor, lam: torch.Tensor):
        self.prototypes, self.have, self.data = prototypes, have, lam

    def feature_penalty(self, feats, y, valid, d):
        y = y.long()
        mask = self.have[y].to(feats.dtype) * valid
        sq = ((feats - self.prototypes[y].to(feats.dtype)) ** 2).sum(-1) * mask
        return d[0] * sq.sum() / (valid.sum().clamp_min(1) * feats.shape[-1])

    @classmethod
    def concat(cls, parts, rows):
        raise ValueError("concat_plans: a prototype pull is not trained together with other plans")


META_PARTS = {"fo": 2, "hf": 3}   # the parts a meta step cuts its batch into: D, D' (and D'' for hf)


class MetaStep(Term):
    """Per-FedAvg's local step (Fallah et al., NeurIPS 2020, Alg. 1), the row's whole objective:
    the step's real samples are cut into D (first part) and D' (second), and, for the
    Hessian-free variant, D'' (third), each of ceil(n / parts) samples but at most `split`
    (`parts_of`). With theta' = theta - alpha grad f(theta; D),
      fo: the gradient applied is grad f(theta'; D')                      (first-order MAML)
      hf: it is g - alpha d, g = grad f(theta'; D'), and d the finite-difference Hessian-vector
          product [grad f(theta + delta g; D'') - grad f(theta - delta g; D'')] / (2 delta)
          (the paper's Per-FedAvg (HF), eq. 11).
    The outer step is the run's optimizer (train.optimizer, train.lr = beta). `data` is unused
    (a zero per row). PFLlib (TsingZ0/PFLlib, clientperavg.py) has the FO variant only and cuts
    a loader batch of 2B into two halves of B, as `split` = train.batch_size / 2 does here."""

    def __init__(self, alpha: float, split: int, variant: str, delta: float, rows: int, like: torch.Tensor):
        self.alpha, self.split, self.variant, self.delta = alpha, split, variant, delta
        self.data = like.new_zeros(rows, 1)

    def wrap(self, objective):
        """The meta objective of the batch, its data losses those of `objective` (with the
        other terms' outputs and weights, no penalties)."""
        def meta(params, x, y, valid, data, buffers=None, model=None, penalties=True):
            return self.objective(lambda p, xs, ys, vs: objective(p, xs, ys, vs, data, buffers, model, False)[1],
                                  params, x, y, valid)
        return meta

    def objective(self, loss, params: Stack, x, y, valid):
        """(the scalar whose gradient in `params` is the step's direction, the data loss
        f(theta'; D')). `loss(params, x, y, valid)` is the mean data loss of a batch."""
        from torch.func import grad
        part = self.parts_of(x, y, valid)
        fixed = {k: v.detach() for k, v in params.items()}
        g1 = grad(loss)(fixed, *part(0))
        inner = {k: params[k] - self.alpha * g1[k].detach() for k in params}   # d inner / d theta = I
        if self.variant == "fo":
            meta = loss(inner, *part(1))
            return meta, meta
        g = grad(loss)({k: v.detach() for k, v in inner.items()}, *part(1))
        plus = grad(loss)({k: fixed[k] + self.delta * g[k] for k in params}, *part(2))
        minus = grad(loss)({k: fixed[k] - self.delta * g[k] for k in params}, *part(2))
        direction = {k: (g[k] - self.alpha * (plus[k] - minus[k]) / (2 * self.delta)).detach() for k in params}
        surrogate = sum((direction[k] * params[k]).sum() for k in params)
        return surrogate, loss(inner, *part(1)).detach()

    def parts_of(self, x, y, valid):
        """`part(i)`: (x, y, valid) of the i-th part of the batch, `split` slots wide. A batch's
        real samples are a prefix of it (local_training/schedule.py), n of them; part i holds real
        samples i * size to (i + 1) * size - 1, size = min(ceil(n / parts), split), and padding
        after them. A full batch is cut as slices at multiples of `split` (the same samples),
        and a short one is shared out: cutting it by slot position gave a client with fewer
        samples than half a batch an empty D', so a zero meta-gradient (Per-FedAvg never
        trained on scikit-learn digits at 50 samples per client and batch 100)."""
        parts = META_PARTS[self.variant]
        s, width = self.split, valid.shape[0]
        n = valid.to(torch.long).sum()
        size = torch.clamp(torch.div(n + parts - 1, parts, rounding_mode="floor"), max=s)
        slot = torch.arange(s, device=valid.device)

        def part(i):
            pos = i * size + slot
            keep = (slot < size) & (pos < n)
            pos = pos.clamp(max=width - 1)
            return x[pos], y[pos], valid[pos] * keep.to(valid.dtype)
        return part

    @classmethod
    def concat(cls, parts, rows):
        raise ValueError("concat_plans: Per-FedAvg's meta step is not trained together with other plans")


def concat_terms(term_lists: List[List[Term]], rows: List[int]) -> List[Term]:
    """The terms of plans trained together: one term per kind, in order of first appearance."""
    kinds = []
    for terms in term_lists:
        for term in terms:
            if type(term) not in kinds:
                kinds.append(type(term))
    out = []
    for kind in kinds:
        parts = [next((t for t in terms if type(t) is kind), None) for terms in term_lists]
        out.append(kind.concat(parts, rows))
    return out


def row_data(term: Term, m, idx=None) -> torch.Tensor:
    """Term data of row(s) m at samples idx (per-sample terms) or of the row(s) only."""
    return term.data[m, idx] if term.per_sample else term.data[m]


def terms_from(refs: Optional[Stack] = None, coeffs: Optional[torch.Tensor] = None,
               offsets: Optional[torch.Tensor] = None, sample_weights: Optional[torch.Tensor] = None) -> List[Term]:
    """The terms for the classic ingredients given as tensors (None: left out), in the order the
    objective applies them; for scripts and tests that build a LocalJob by hand."""
    return ([Proximal(refs, coeffs)] if refs is not None else []) + \
        ([FrozenOffset(offsets)] if offsets is not None else []) + \
        ([SampleWeights(sample_weights)] if sample_weights is not None else [])
