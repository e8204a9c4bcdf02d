"""`python -m kmicro.cli`: the same as the `kmicro` console script."""
import sys

from kmicro.cli import main

sys.exit(main())
