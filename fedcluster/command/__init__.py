"""The commands a user types and the Python API beside them: `fedcluster` (entry, cli: one run or a
sweep), the sweep's skip-finished and refusal rules (sweep), `fedcluster show` (show) and
`fedcluster.run` / `fedcluster.load_runs` (api)."""
