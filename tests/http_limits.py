"""Connection limits for the tests' HTTP clients of kueue-graphql.

The server closes a keep-alive connection after `--keep-alive-timeout` (5 s by default), and
httpx keeps an idle one for 5 s too: a request sent on a connection the server is closing at
that moment fails with `httpx.ReadError` (seen under load). A client must give up idle
connections well before the server does.
"""

import httpx

SERVER_CLIENT_LIMITS = httpx.Limits(keepalive_expiry=1.0)
