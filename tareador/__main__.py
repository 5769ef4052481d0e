"""``python -m tareador``: the same as the ``tareador`` console script."""

import sys

from tareador.cli.main import main

sys.exit(main())
