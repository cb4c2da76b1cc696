"""What the raw JSON-RPC test servers (no library) share: writing a message, answering a call
with a text block.  Imported by name: a script's own directory is first on its path."""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(message_id, value):
    send({"jsonrpc": "2.0", "id": message_id, "result": {"content": [{"type": "text", "text": value}]}})
