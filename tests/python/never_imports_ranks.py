"""A script that fails before it imports ranks (as one whose interpreter lacks a module would):
`ranks sim` must say that the script ended before its simulation could start, not ask whether
it is built on ranks::main."""

import sys

sys.exit("never_imports_ranks.py: stopping before any import of ranks")
