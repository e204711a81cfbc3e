// The GraphQL over HTTP audit (graphql-http's serverAudits) against a running kueue-graphql.
//
//   KGQL_URL=http://127.0.0.1:8080/graphql KGQL_TOKEN=... node audit.mjs
//
// Every audit request carries `Authorization: Bearer $KGQL_TOKEN` (the server serves no one
// without a token). Prints one JSON object per audit on stdout, in the suite's order:
// {"id", "name", "status": "ok" | "notice" | "warn" | "error", "reason"?, "httpStatus"?,
// "contentType"?, "body"?}. Exits 0 once every audit has run, whatever their results (the
// caller judges them); 2 on a usage error. The token is never printed.
import { serverAudits } from 'graphql-http';

const url = process.env.KGQL_URL;
const token = process.env.KGQL_TOKEN;
if (!url || !token) {
  console.error('usage: KGQL_URL=<server>/graphql KGQL_TOKEN=<bearer token> node audit.mjs');
  process.exit(2);
}
// Each request is bounded; the caller bounds the whole run.
const REQUEST_TIMEOUT_MS = 30_000;

function authorizedFetch(input, init = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return fetch(input, {
    ...init,
    headers,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}

async function describe(response) {
  if (!response) return {};
  let body;
  try {
    body = (await response.clone().text()).slice(0, 500);
  } catch {
    body = '(body already read)';
  }
  return {
    httpStatus: response.status,
    contentType: response.headers.get('content-type'),
    body,
  };
}

for (const audit of serverAudits({ url, fetchFn: authorizedFetch })) {
  let result;
  try {
    result = await audit.fn();
  } catch (error) {
    // graphql-http throws only on a fatal problem (e.g. the server unreachable).
    result = { id: audit.id, name: audit.name, status: 'error', reason: `threw: ${error}` };
  }
  const line = { id: result.id, name: result.name, status: result.status };
  if (result.status !== 'ok') {
    line.reason = result.reason;
    Object.assign(line, await describe(result.response));
  }
  console.log(JSON.stringify(line));
}
