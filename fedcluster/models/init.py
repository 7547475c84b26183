"""Weight initialisation shared by the models."""
import torch.nn as nn


def xavier_normal_linear_kaiming_conv(module: nn.Module) -> None:
    """FedSoft (§5, App. C; authors' models.py): Xavier-normal linear weights,
    Kaiming-uniform conv weights, zero biases."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_normal_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Conv2d):
            nn.init.kaiming_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
