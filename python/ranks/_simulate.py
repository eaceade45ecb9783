"""``python -m ranks._simulate script.py args``: what ``ranks sim -- python script.py args``
starts. The script and its arguments become sys.argv, its directory the first entry of
sys.path (as ``python script.py`` makes them), and the script runs on every simulated rank
(ranks._script)."""

import os
import sys


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m ranks._simulate script.py [args...] (under ranks sim)")
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    from ranks import _script
    _script.run_simulated()


if __name__ == "__main__":
    main()
