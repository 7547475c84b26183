"""`python -m fedcluster.report DIR`, as the module form of the report worked before it became a package."""
from .command import main

main()
