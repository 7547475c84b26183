"""The run's own settings (the top-level keys and the clients' local solver `train.*`), each declared once, here:
its type, default, allowed values and help in one field, as a group option's settings are declared once in its
class's signature (rules.py).

    rounds: Annotated[int, Count, Help("communication rounds")] = 50

Everything that needs to know a run key reads it from these two dataclasses: the structured config Hydra
composes from (config/store.py `Config`, so a misspelt key or a wrong type is refused at composition), the
checks before a run (config/validate.py, by `rules()`), which keys change results (run_records/identity.py
`VOLATILE_KEYS`, by the `Volatile` marker), the misspelt-key suggestions (config/composition.py) and
`fedcluster show run`. conf/config.yaml holds only the defaults list and Hydra's settings; a preset or a data
set's solver file overrides these values as before."""
import dataclasses
import typing
from dataclasses import dataclass
from typing import Annotated, Dict, List, Optional, Tuple

from .local_training.optim import OPTIMIZERS
from .rules import MAX_BATCH, AtLeast, Between, Count, Help, OneOf, Positive, Probability, Rule

OPTIMIZER_NAMES = tuple(sorted(OPTIMIZERS))   # the local optimizers fedcluster implements (local_training/optim.py)
ENGINES = ("auto", "batched", "looped", "grouped", "sequential")   # how local training is computed (assemble.choose_engine)


@dataclass(frozen=True)
class Volatile:
    """The setting changes how a run is shown or kept, never its numbers: two requests that differ only in volatile
    keys are the same run (run_records/identity.py)."""


VOLATILE = Volatile()


@dataclass(frozen=True)
class MayBeAbsent:
    """A config may lack the key (`~key`): a run reads it as null."""


MAY_BE_ABSENT = MayBeAbsent()


@dataclass
class Train:
    """The clients' local solver. A data set with its own conf/solver/<dataset>.yaml (FedSoft's synthetic data and
    images) sets it there; the rest (images, text) use CLoVE's (§5.2 and its code): Adam, lr 1e-3, one local
    epoch, batch 100."""
    optimizer: Annotated[str, OneOf(OPTIMIZER_NAMES), Help("the local optimizer")] = "adam"
    lr: Annotated[float, Positive, Help("the local learning rate")] = 1.0e-3
    epochs: Annotated[int, Count, Help("local epochs per round (unless `steps` is set)")] = 1
    batch_size: Annotated[int, Between(1, MAX_BATCH), Help("local mini-batch size")] = 100
    momentum: Annotated[float, Probability, Help("SGD momentum")] = 0.0
    weight_decay: Annotated[float, AtLeast(0), Help("L2 weight decay")] = 0.0
    steps: Annotated[Optional[int], Count, Help("set: this many mini-batch steps per round instead of `epochs` "
                                                "epochs")] = None


@dataclass
class RunKeys:
    """The run's top-level keys."""
    seed: Annotated[int, AtLeast(0), Help("the seed of every random draw of the run (split, model, sampling)")] = 0
    rounds: Annotated[int, Count, Help("communication rounds")] = 50
    engine: Annotated[str, OneOf(ENGINES),
                      Help("how local training is computed: auto (batched; for convolutions on CPU grouped at "
                           "train.batch_size <= 10, else looped), batched (vmap), looped (a loop over clients), "
                           "grouped (one call per layer for all clients), sequential")] = "auto"
    eval_every: Annotated[int, AtLeast(1), Help("evaluate every this many rounds (and always the last)")] = 1
    eval_local_train: Annotated[bool, Help("also score each client's model on its own training data (a paper's "
                                           "training-data column)")] = True
    eval_round_start_train: Annotated[bool, Help("also score each client's local model on its training data at the "
                                                 "START of each evaluated round (how CLoVE's code scores FedAvg)")] \
        = False
    num_clusters: Annotated[Optional[int], AtLeast(1),
                            Help("K for clustered algorithms and cluster-wise partitions; null: the data's own count "
                                 "(settled before config.yaml records it)")] = None
    checkpoint_every: Annotated[int, AtLeast(0), VOLATILE, Help("write a checkpoint every this many rounds (0: "
                                                                "none)")] = 10
    progress: Annotated[bool, VOLATILE, Help("a progress bar (a terminal) or progress lines (a log) on stderr")] = True
    plots: Annotated[bool, VOLATILE, Help("draw the run's figures when it finishes")] = True
    overwrite: Annotated[bool, VOLATILE, Help("true: replace a finished (or another config's) run in the output "
                                              "directory")] = False
    divergence_factor: Annotated[Optional[float], Positive,
                                 Help("stop when a client's loss exceeds this times the starting loss (null: "
                                      "never)")] = 1.0e4
    objective: Annotated[Optional[str], VOLATILE,
                         Help("what a sweep's job returns (Optuna maximises/minimises it): a validation metric such "
                              "as local_val_accuracy; null: local_val_<the task's key metric>. Never test data")] = None
    table: Annotated[Optional[str], MAY_BE_ABSENT, Help("the paper table the run belongs to (set by presets; the report prints the "
                                         "paper's numbers beside it)")] = None


GROUPS = ("dataset", "partition", "model", "algorithm", "hardware", "privacy")   # composed from conf/<group>/, in this order
LOGGER_HELP = "trackers: {name: options} (logger=tensorboard, logger=[tensorboard,mlflow]); fedcluster/loggers"


@dataclass(frozen=True)
class RunKey:
    """One declared setting as the readers want it."""
    key: str                       # its full key: "rounds", "train.lr"
    annotation: object             # the type without its markers
    default: object
    rules: Tuple[Rule, ...]
    help: str
    volatile: bool
    may_be_absent: bool


def _declared(cls, prefix: str = "") -> List[RunKey]:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        base, meta = (hint.__origin__, hint.__metadata__) if typing.get_origin(hint) is Annotated else (hint, ())
        helps = [m.text for m in meta if isinstance(m, Help)]
        out.append(RunKey(prefix + f.name, base, f.default, tuple(m for m in meta if isinstance(m, Rule)),
                          helps[0] if helps else "", any(isinstance(m, Volatile) for m in meta),
                          any(isinstance(m, MayBeAbsent) for m in meta)))
    return out


def run_keys() -> List[RunKey]:
    """Every run key, the top-level ones first, then `train.*`, in declaration order."""
    return _declared(RunKeys) + _declared(Train, "train.")


def rules() -> Dict[str, Rule]:
    """{full key: its rule} for the keys that have one (config/validate.py)."""
    return {k.key: rule for k in run_keys() for rule in k.rules}


def volatile_keys() -> Tuple[str, ...]:
    """The top-level keys that never change a run's numbers, in declaration order."""
    return tuple(k.key for k in run_keys() if k.volatile)


def top_level_names() -> List[str]:
    """Every top-level key a composed config has: the groups, `logger`, `train`, and the run keys."""
    return [*GROUPS, "logger", "train", *(f.name for f in dataclasses.fields(RunKeys))]


def may_be_deleted() -> set:
    """Top-level keys a config may lack (`~key`): `logger` (no tracker), `privacy` (no mechanism: a config recorded
    before the group existed, 2026-12-03, is the same run) and the run keys marked MAY_BE_ABSENT."""
    return {"logger", "privacy"} | {k.key for k in run_keys() if k.may_be_absent}


def train_names() -> List[str]:
    return [f.name for f in dataclasses.fields(Train)]
