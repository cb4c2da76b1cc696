"""A process a launcher starts (what ``npx`` or ``sh -c`` leave running): it writes its pid to the
file named by its first argument, then outlives the end of its stdin until it is signalled."""

import os
import sys
import time

with open(sys.argv[1], "w") as out:
    out.write(str(os.getpid()))
ready = '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"ready"}}'
sys.stdout.write(ready + "\n")
sys.stdout.flush()
sys.stdin.buffer.read()
while True:
    time.sleep(0.1)
