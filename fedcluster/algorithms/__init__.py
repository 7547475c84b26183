"""Algorithms (conf/algorithm/*.yaml): each decides assignment, selection, local objective
and aggregation; the shared round loop lives in fedcluster.runner. Every module of this package
is imported here, so a new algorithm file is found (and its config schema registered,
fedcluster.config.store) without a registration line."""
import importlib
import pkgutil

from .base import Algorithm, RunView, Phase, RoundPlan
from .cam import CAM
from .cfl import CFL
from .clove import CLoVE
from .clustered import ClusteredAlgorithm
from .ensemble import Ensemble
from .fedala import FedALA
from .fedavg import FedAvg, FedProx
from .fedem import FedEM
from .fedpac import FedPAC
from .fedproto import FedProto
from .fedsoft import FedSoft
from .fesem import FeSEM
from .ifca import IFCA
from .flexcfl import FlexCFL
from .fold import Fold, gathered
from .local import LocalOnly
from .pacfl import PACFL
from .perfedavg import PerFedAvg

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Algorithm", "ClusteredAlgorithm", "RunView", "Phase", "RoundPlan", "CAM", "CFL", "CLoVE", "Ensemble", "FedALA", "FedAvg",
           "FedEM", "FedPAC", "FedProto", "FedProx", "FedSoft", "FeSEM", "FlexCFL", "Fold", "IFCA", "LocalOnly", "PACFL",
           "PerFedAvg", "gathered"]
