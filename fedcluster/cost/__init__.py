"""What a run costs before it runs: FLOPs counted from the model's layers and the protocol (count.py, flops.py)
and this machine's measured rates (rates.py), which the `fedcluster estimate` command (command/estimate.py) reads."""
