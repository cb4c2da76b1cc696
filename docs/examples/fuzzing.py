"""A short fuzz campaign against first_server.py over stdio (needs the `fuzz` extra)."""

import sys

from mcp_trio.fuzzing import FuzzConfig, StdioTarget, run

config = FuzzConfig(
    target=StdioTarget([sys.executable, "first_server.py"]),
    revisions=["2025-11-25"],
    campaigns=["valid", "invalid"],  # also: lifecycle, capabilities, http, stateful
    seed=1,  # the same seed sends the same cases
    max_examples=10,  # generated per campaign and revision; --time S in the command
    # (invalid first runs its corpus of known-bad inputs, each once: 34 more in 2025-11-25)
)
for stats in run(config):
    print(f"{stats.revision} {stats.campaign}: {stats.examples} examples, {len(stats.findings)} findings")
