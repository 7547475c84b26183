"""Client-level differential privacy of the model updates (conf/privacy/ <-> this package): `NoPrivacy`, the
default (every run as it was), and `ClientDP`, DP-FedAvg (McMahan, Ramage, Talwar & Zhang, "Learning
Differentially Private Recurrent Language Models", ICLR 2018), for every method whose aggregation is a mean of its
clients' updates: each update clipped, each model's sum noised, a fixed denominator (mechanism.py); the private mean
as a round's fold (algorithms/private_means.py); the privacy loss from Google's dp-accounting (accounting.py)."""
from .mechanism import ClientDP, NoPrivacy, Release

__all__ = ["ClientDP", "NoPrivacy", "Release"]
