"""`python -m vazao` runs the command line."""

from vazao.cli import main

main()
