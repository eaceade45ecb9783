"""A rank that starts a process of its own (as a data-loader worker or a shell command would)
and waits for it: what `ranks run` must not leave behind when it is killed outright."""

import subprocess
import sys

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
print(f"started {child.pid}", flush=True)
child.wait()
