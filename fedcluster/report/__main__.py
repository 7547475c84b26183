"""`python -m fedcluster.report DIR`, as the module form of the report worked before it became a package."""
from . import main

main()
