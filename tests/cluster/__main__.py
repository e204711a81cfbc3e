import sys

from tests.cluster.driver import main

sys.exit(main())
