"""`python -m fedcluster ...` is the `fedcluster` command."""
from .command.entry import main

main()
