"""What a run or sweep costs before it runs: FLOPs counted from the model's layers and the protocol (count.py,
flops.py), this machine's measured rates (rates.py), the jobs a command line runs (jobs.py), and the
`fedcluster estimate` command (estimate.py)."""
