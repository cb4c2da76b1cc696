"""``python -m mcp_trio._cli``: the ``mcp-trio`` command."""

import sys

from . import main

sys.exit(main())
