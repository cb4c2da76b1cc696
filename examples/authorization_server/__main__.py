"""``python -m examples.authorization_server``: serve the example authorization server."""

import sys

from ._cli import main

sys.exit(main())
