"""Algorithms (conf/algorithm/*.yaml): each decides assignment, selection, local objective
and aggregation; the shared round loop lives in fedcluster.runner."""
from .base import Algorithm, Federation, RoundPlan
from .cam import CAM
from .cfl import CFL
from .clove import CLoVE
from .ensemble import Ensemble
from .fedavg import FedAvg, FedProx
from .fedem import FedEM
from .fedsoft import FedSoft
from .fesem import FeSEM
from .ifca import IFCA
from .local import LocalOnly

__all__ = ["Algorithm", "Federation", "RoundPlan", "CAM", "CFL", "CLoVE", "Ensemble", "FedAvg", "FedEM", "FedProx", "FedSoft", "FeSEM",
           "IFCA", "LocalOnly"]
