"""The "server" a stdio client launches under ``mcp-trio fuzz --client CMD --client-transport stdio``.

Run by path (``python _relay.py PORT``), so it imports nothing of the package and starts
fast: it connects to the fuzzing server on 127.0.0.1:PORT and copies its stdin to the
socket and the socket to its stdout, byte for byte, until the client closes its stdin
(then it half-closes the socket) and the fuzzing server closes the connection.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _upstream(sock: socket.socket) -> None:
    stdin = sys.stdin.fileno()
    try:
        while True:
            chunk = os.read(stdin, 65536)
            if not chunk:
                break
            sock.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: _relay.py PORT", file=sys.stderr)
        return 2
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    sock.settimeout(None)
    threading.Thread(target=_upstream, args=(sock,), daemon=True).start()
    stdout = sys.stdout.fileno()
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(stdout, view) :]
    except OSError:  # the client closed our stdout, or the connection broke
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
