import sys

from minibert.cli import main

sys.exit(main())
