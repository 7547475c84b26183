"""A run's directory and its records, apart from what it computes: the directory it owns and may write in (rundir), the
atomic writes (io), the records kept between rounds and the checkpoint they pack into (record,
integrity), the run's identity and fingerprints (identity), its log and provenance, the stop on a
non-finite loss (divergence) and the summary a finished run leaves (summary).

Named run_records (it was `lifecycle`), not run: `fedcluster.run` is the Python API's function (fedcluster/__init__.py)."""
