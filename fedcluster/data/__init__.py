"""Data sets (conf/dataset/*.yaml): sources of S distributions, and their split into clients."""
from .federated import ClientSplit, FederatedData, federate
from .images import ImageSource
from .synthetic import SeparatedRegression, SyntheticRegression
from .hf import HuggingFaceSource
from .tensors import TensorSource
from .text import TextSource

__all__ = ["ClientSplit", "FederatedData", "federate", "ImageSource", "SyntheticRegression",
           "SeparatedRegression", "TensorSource", "TextSource", "HuggingFaceSource"]
