"""Allow `python -m trainguard`."""

import sys

from trainguard.cli import main

sys.exit(main())
