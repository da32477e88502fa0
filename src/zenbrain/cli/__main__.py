"""``python -m zenbrain.cli``: the ``zenbrain`` command."""

import sys

from . import main

sys.exit(main())
