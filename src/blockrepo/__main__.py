"""Allows `python -m blockrepo`."""

from blockrepo.cli import main

main()
