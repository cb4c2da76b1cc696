"""A process that outlives the end of its stdin but not SIGTERM (to test the
stdio client's shutdown order: close stdin, wait, SIGTERM, wait, SIGKILL).

It says it is ready with one line on stdout, reads stdin to its end, reports
that on stderr and then keeps running; SIGTERM keeps its default action.
"""

import sys
import time

ready = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"ready"}}'
sys.stdout.write(ready + "\n")
sys.stdout.flush()
sys.stdin.buffer.read()
sys.stderr.write("outlives_stdin: stdin closed, still running\n")
sys.stderr.flush()
while True:
    time.sleep(0.1)
