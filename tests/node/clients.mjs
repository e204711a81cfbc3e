// One GraphQL operation through urql and Apollo Client, as a portal would configure them,
// against a running kueue-graphql.
//
//   KGQL_URL=http://127.0.0.1:8080/graphql KGQL_TOKEN=... \
//   KGQL_OPERATION='{"query": "query Q { ... }", "variables": {}}' node clients.mjs
//
// urql: its default client (cacheExchange + fetchExchange, queries over GET within the URL
// limit). Apollo Client: its default InMemoryCache and HttpLink behind the automatic persisted
// queries link (hash-only POST first, the document on PERSISTED_QUERY_NOT_FOUND); then a second
// ApolloClient, with an empty cache, sends the same operation (hash only, now known).
// The only option set on each is the Authorization header; fetch is wrapped only to record
// what went over the wire. Prints one JSON object on stdout:
// {"urql": {"data", "error", "requests"}, "apollo": [{"data", "error", "requests"}, ...]}
// with requests as [{"method", "sentDocument", "sentHash", "status", "contentType", "codes"}].
// The token is never printed.
import { createHash } from 'node:crypto';

import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { Client, cacheExchange, fetchExchange } from '@urql/core';

const url = process.env.KGQL_URL;
const token = process.env.KGQL_TOKEN;
const operation = process.env.KGQL_OPERATION;
if (!url || !token || !operation) {
  console.error('usage: KGQL_URL=... KGQL_TOKEN=... KGQL_OPERATION=\'{"query": ...}\' node clients.mjs');
  process.exit(2);
}
const { query, variables = {} } = JSON.parse(operation);
const REQUEST_TIMEOUT_MS = 30_000;
const headers = { authorization: `Bearer ${token}` };

// fetch, recording each request's method, whether it carried the document and/or a persisted
// query's hash, and the answer's status, media type and error codes.
function recordingFetch(requests) {
  return async (input, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    let sent = {};
    if (method === 'GET') {
      const params = new URL(String(input)).searchParams;
      sent = { query: params.get('query'), extensions: JSON.parse(params.get('extensions') ?? 'null') };
    } else if (typeof init.body === 'string') {
      sent = JSON.parse(init.body);
    }
    const response = await fetch(input, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    let codes = [];
    try {
      const body = await response.clone().json();
      codes = (body.errors ?? []).map((error) => error.extensions?.code ?? null);
    } catch {
      codes = ['(not JSON)'];
    }
    requests.push({
      method,
      sentDocument: typeof sent.query === 'string' && sent.query.length > 0,
      sentHash: sent.extensions?.persistedQuery?.sha256Hash ?? null,
      status: response.status,
      contentType: response.headers.get('content-type'),
      codes,
    });
    return response;
  };
}

function described(error) {
  return error ? String(error.stack ?? error) : null;
}

async function viaUrql() {
  const requests = [];
  const client = new Client({
    url,
    exchanges: [cacheExchange, fetchExchange],
    fetchOptions: { headers },
    fetch: recordingFetch(requests),
  });
  const result = await client.query(query, variables).toPromise();
  return { data: result.data ?? null, error: described(result.error), requests };
}

async function viaApollo() {
  const requests = [];
  const client = new ApolloClient({
    cache: new InMemoryCache(),
    link: new PersistedQueryLink({
      sha256: (text) => createHash('sha256').update(text).digest('hex'),
    }).concat(new HttpLink({ uri: url, headers, fetch: recordingFetch(requests) })),
  });
  try {
    const result = await client.query({ query: gql(query), variables });
    return { data: result.data ?? null, error: described(result.error), requests };
  } catch (error) {
    return { data: null, error: described(error), requests };
  } finally {
    client.stop();
  }
}

const urql = await viaUrql();
const apollo = [await viaApollo(), await viaApollo()];
console.log(JSON.stringify({ urql, apollo }));
