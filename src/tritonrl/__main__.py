import sys

from tritonrl.cli import main

sys.exit(main())
