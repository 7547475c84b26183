"""`python -m fedcluster ...` is the `fedcluster` command."""
from .cli import main

main()
