"""python -m mcp_trio: the mcp-trio command."""

import sys

from ._cli import main

sys.exit(main())
