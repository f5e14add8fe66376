"""`python -m bot.cli`: the same as the `countersign` script."""

import sys

from bot.cli import main

sys.exit(main())
