"""Run by an interpreter that cannot import ranks (`python -I -S`: no site-packages, no
PYTHONPATH): `ranks sim` must say that the script ended before its simulation could start, not
ask whether it is built on ranks::main. Under the simulation proper this script would fail on
every rank, with its message."""

import sys

sys.exit("never_imports_ranks.py: stopping on every rank")
