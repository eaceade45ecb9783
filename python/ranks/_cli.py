"""The `ranks` command of a pip-installed package: the C++ program installed in the package's
bin/ directory, run in this process's place. `ranks report` plots with this interpreter unless
RANKS_PYTHON names another."""

import os
import sys


def main():
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ranks")
    if not os.access(program, os.X_OK):
        sys.exit(f"ranks: {program} is missing: this ranks package was not installed by pip; "
                 "run the ranks command of the build or install tree instead")
    os.environ.setdefault("RANKS_PYTHON", sys.executable)
    os.execv(program, [program, *sys.argv[1:]])


if __name__ == "__main__":
    main()
