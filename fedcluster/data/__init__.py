"""Data sets (conf/dataset/*.yaml): sources of S distributions, and their split into clients."""
from .federated import ClientSplit, FederatedData, build_federated_data, build_label_federated_data
from .images import ImageSource
from .synthetic import SeparatedRegression, SyntheticRegression
from .text import TextSource

__all__ = ["ClientSplit", "FederatedData", "build_federated_data", "build_label_federated_data", "ImageSource", "SyntheticRegression",
           "SeparatedRegression", "TextSource"]
