"""Models built from conf/model/*.yaml. Each is a plain nn.Module; the engines call it
functionally (torch.func.functional_call) over stacked per-client parameters."""
from .autoencoder import ConvAutoencoder, FCAutoencoder
from .cnn import BatchNormCNN, CifarCNN, FedAvgCNN, GenConvNet, LeNetCNN, LettersCNN
from .linear import LinearRegression
from .mlp import MLP
from .text import TextCNN

__all__ = ["LinearRegression", "MLP", "LeNetCNN", "GenConvNet", "LettersCNN", "FedAvgCNN", "CifarCNN", "FCAutoencoder", "ConvAutoencoder", "BatchNormCNN",
           "TextCNN"]
