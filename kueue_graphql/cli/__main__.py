"""`python -m kueue_graphql.cli`, as the `kueue-graphql` script."""

import sys

from kueue_graphql.cli import main

sys.exit(main())
