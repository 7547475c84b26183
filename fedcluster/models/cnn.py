"""Convolutional networks for image distributions."""
import copy
from typing import Annotated, Sequence

import torch
import torch.nn as nn

from ..rules import AtLeast, OneOf, Probability
from . import grouped
from .init import INITS, check_sizes, initialize
from .pooling import MaxPool2x2


def _flat_size(features: nn.Module, in_shape) -> int:
    """Values per sample `features` hands the classifier, from one zero sample's forward pass. A copy sized on
    the meta device (assemble.count_parameters) runs that pass on an uninitialised CPU copy of its layers
    (convolutions only: kilobytes): a convolution on meta tensors loads torch._dynamo, about 1.2 s of every CNN
    run's start-up that nothing else in a looped-engine run needs."""
    on_meta = any(p.is_meta for p in features.parameters())
    probe = copy.deepcopy(features).to_empty(device="cpu") if on_meta else features
    was_training = probe.training
    probe.eval()   # leave batch-norm running statistics untouched
    with torch.no_grad():
        size = probe(torch.zeros(1, *in_shape, device="cpu" if on_meta else None)).flatten(1).shape[1]
    probe.train(was_training)
    return size


class FeaturesClassifier(nn.Module):
    """A CNN as `features` (convolutions, flattened) then `classifier` (fully connected layers, the
    last one the output layer): the shape every CNN here has, and its one forward pass."""

    def forward(self, x, with_features: bool = False):
        """Logits; with_features: (logits, the representation the last layer reads: FedProto's
        and FedPAC's feature extractor output, PFLlib's split of the model before its last layer)."""
        feats = self.classifier[:-1](self.features(x))
        out = self.classifier[-1](feats)
        return (out, feats) if with_features else out

    def _layers(self):
        return [(f"features.{i}", m) for i, m in enumerate(self.features)] + \
            [(f"classifier.{i}", m) for i, m in enumerate(self.classifier)]

    def rows_unsupported(self):
        """Why `forward_rows` cannot run this model (a layer it has no grouped form of), or None."""
        return grouped.unsupported(self._layers())

    def forward_rows(self, params, x, with_features: bool = False):
        """R stacked models (params [R, ...]) on their own batches x [R, B, ...] in one call per layer
        (models/grouped.py): logits [R, B, outputs], with_features: and the representation [R, B, F]."""
        rows = x.shape[0]
        layers = self._layers()
        h, is_grouped = grouped.forward_rows(layers[:-1], params, grouped.grouped_input(x), rows, x.dim() == 5)
        if is_grouped:
            raise ValueError("forward_rows: the classifier must start from flattened features")
        out, _ = grouped.forward_rows(layers[-1:], params, h, rows, False)
        return (out, h) if with_features else out


def lenet_convs(channels: int) -> nn.Sequential:
    """conv 6@5x5 -> ReLU -> 2x2 max-pool -> conv 16@5x5 -> ReLU -> 2x2 max-pool -> flatten: the feature
    extractor LeNetCNN and CLoVE's GenConvNet share (they differ in what follows)."""
    return nn.Sequential(nn.Conv2d(channels, 6, 5), nn.ReLU(), MaxPool2x2(),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), MaxPool2x2(), nn.Flatten())


class LeNetCNN(FeaturesClassifier):
    """Small CNN: conv 6@5x5 -> pool -> conv 16@5x5 -> pool -> FC 120 -> FC 84 -> classes.

    LeNet-style; the benchmark's workload (b). Not CLoVE's GenConvNet, which has no hidden FC
    layers (GenConvNet below)."""

    def __init__(self, in_shape, num_outputs: int, init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        self.features = lenet_convs(in_shape[0])
        self.classifier = nn.Sequential(
            nn.Linear(_flat_size(self.features, in_shape), 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, num_outputs))
        initialize(self, init)


class GenConvNet(FeaturesClassifier):
    """CLoVE's model for MNIST and Fashion-MNIST (authors' `model.py`, class GenConvNet, repository
    Nokia-Bell-Labs/Loss-Vector-based-Clustered-Federated-Learning at b602090f): conv 6@5x5 -> ReLU ->
    2x2 max-pool -> conv 16@5x5 -> ReLU -> 2x2 max-pool -> one linear layer 16*4*4 -> classes. No
    hidden fully connected layer: the flattened convolutions are the representation the class layer
    reads (FedProto's and FedPAC's features)."""

    def __init__(self, in_shape, num_outputs: int, init: Annotated[str, OneOf(INITS)] = "pytorch"):
        super().__init__()
        self.features = lenet_convs(in_shape[0])
        self.classifier = nn.Sequential(nn.Linear(_flat_size(self.features, in_shape), num_outputs))
        initialize(self, init)


class LettersCNN(FeaturesClassifier):
    """FedSoft's letters CNN (App. C): two 5x5 convs (padding 2), each followed by 2x2
    max-pooling, then FC 512 + ReLU, then the class layer.

    Channel widths 32/64 come from the authors' models.py (the paper gives none). The
    authors' code applies ReLU and softmax after the class layer; we follow the paper's
    text (ReLU after the 512 layer) and return logits for cross-entropy."""

    def __init__(self, in_shape, num_outputs: int, channels: Annotated[Sequence[int], AtLeast(1)] = (32, 64),
                 hidden: Annotated[int, AtLeast(1)] = 512, init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        channels = check_sizes("channels", channels, length=2)
        (hidden,) = check_sizes("hidden", hidden)
        c = in_shape[0]
        self.features = nn.Sequential(
            nn.Conv2d(c, channels[0], 5, padding=2), MaxPool2x2(),
            nn.Conv2d(channels[0], channels[1], 5, padding=2), MaxPool2x2(), nn.Flatten())
        self.classifier = nn.Sequential(
            nn.Linear(_flat_size(self.features, in_shape), hidden), nn.ReLU(),
            nn.Linear(hidden, num_outputs))
        initialize(self, init)


class FedAvgCNN(FeaturesClassifier):
    """The CNN of the FedAvg paper (McMahan et al., AISTATS 2017, §3 'Experiments'), which
    Fed-CAM §5 uses ("CNN [32]"): two 5x5 convolutions of 32 and 64 channels, each followed by
    a ReLU and 2x2 max pooling, a fully connected layer of 512 units with ReLU, then the class
    layer (softmax in the paper; logits here, for cross-entropy).

    Padding: 'same' (2). The paper gives 1,663,370 parameters for MNIST; with padding 2 the
    feature map is 64 x 7 x 7 and the count is 832 + 51,264 + 1,606,144 + 5,130 = 1,663,370
    exactly (without padding it would be 582,026). The paper's text puts the ReLU only on the
    512 layer; the convolutions' ReLUs follow the TensorFlow MNIST tutorial model this CNN
    is (the same layers, 'same' padding, ReLU after each conv). Unlike LettersCNN (FedSoft's
    letters model, read from the authors' code), the convolutions here have ReLUs."""

    def __init__(self, in_shape, num_outputs: int, init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        c = in_shape[0]
        self.features = nn.Sequential(
            nn.Conv2d(c, 32, 5, padding=2), nn.ReLU(), MaxPool2x2(),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), MaxPool2x2(), nn.Flatten())
        self.classifier = nn.Sequential(
            nn.Linear(_flat_size(self.features, in_shape), 512), nn.ReLU(),
            nn.Linear(512, num_outputs))
        initialize(self, init)


class CifarCNN(FeaturesClassifier):
    """FedSoft's CIFAR-10 CNN (App. C): six 3x3 convs of 32, 64, 128, 128, 256, 256
    channels with ReLU, a 2x2 max-pool after every second conv, then FC 1024 -> 512 -> classes."""

    def __init__(self, in_shape, num_outputs: int,
                 channels: Annotated[Sequence[int], AtLeast(1)] = (32, 64, 128, 128, 256, 256),
                 init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        channels = check_sizes("channels", channels)
        layers, c = [], in_shape[0]
        for i, width in enumerate(channels):
            layers += [nn.Conv2d(c, width, 3, padding=1), nn.ReLU()]
            if i % 2 == 1:
                layers.append(MaxPool2x2())
            c = width
        layers.append(nn.Flatten())
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(_flat_size(self.features, in_shape), 1024), nn.ReLU(),
            nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, num_outputs))
        initialize(self, init)


class BatchNormCNN(FeaturesClassifier):
    """CLoVE's CIFAR-10 classifier (App. B: 'deep CNN ... batch normalization ... dropout in
    fully connected layers'; no sizes given, ours): three blocks of 3x3 conv (32, 64, 128
    channels) + batch norm + ReLU + 2x2 max-pool, then FC 256 + ReLU + dropout(0.5) + classes.
    Trained by the sequential engine: each client's copy keeps its own running statistics."""

    def __init__(self, in_shape, num_outputs: int, channels: Annotated[Sequence[int], AtLeast(1)] = (32, 64, 128),
                 hidden: Annotated[int, AtLeast(1)] = 256, dropout: Annotated[float, Probability] = 0.5,
                 init: Annotated[str, OneOf(INITS)] = "xavier"):
        super().__init__()
        channels = check_sizes("channels", channels)
        (hidden,) = check_sizes("hidden", hidden)
        if not 0 <= dropout < 1:
            from ..errors import ConfigError
            raise ConfigError(f"model.dropout={dropout} is out of range; allowed: in [0, 1)")
        layers, c = [], in_shape[0]
        for width in channels:
            layers += [nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), MaxPool2x2()]
            c = width
        layers.append(nn.Flatten())
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(_flat_size(self.features, in_shape), hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, num_outputs))
        initialize(self, init)
