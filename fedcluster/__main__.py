"""`python -m fedcluster ...` is the `fedcluster` command."""
from .entry import main

main()
