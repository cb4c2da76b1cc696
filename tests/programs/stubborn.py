"""A process that ignores stdin EOF and SIGTERM (to test kill escalation)."""

import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stderr.write("stubborn ready\n")
sys.stderr.flush()
while True:
    time.sleep(0.1)
