// Apollo Client 4 with its default InMemoryCache against a running kueue-graphql, over HTTP
// (HttpLink) and WebSocket (GraphQLWsLink, graphql-ws): what a portal caching by entity sees.
//
//   KGQL_URL=http://127.0.0.1:8080/graphql KGQL_TOKEN=... KGQL_NAMESPACE=team-a \
//   KGQL_JOB=held-job KGQL_OTHER_JOB=other-job node normalised.mjs
//
// 1. Two different queries return the same Workload (`workloadFor` and a `workloads` page):
//    printed as {"step": "shared", ...} with the cache keys they resolved to and the cache's
//    entries for that Workload.
// 2. A watched query shows the Job's diagnosis from the cache; a `diagnosis` subscription is
//    started; {"step": "subscribed", "stage"} is printed when its first result arrived, and the
//    caller then changes the cluster. Each result the watched query shows is printed as
//    {"step": "watched", "stage"}; when it shows another stage than at first, the script
//    prints {"step": "refreshed", ...} and exits. Bounded: it gives up after KGQL_SECONDS.
// The token goes in the Authorization header (HTTP) and the connection_init payload (WebSocket);
// it is never printed.
import { ApolloClient, HttpLink, InMemoryCache, gql, split } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const { KGQL_URL: url, KGQL_TOKEN: token, KGQL_NAMESPACE: namespace, KGQL_JOB: job } = process.env;
const seconds = Number(process.env.KGQL_SECONDS ?? '150');
if (!url || !token || !namespace || !job) {
  console.error('usage: KGQL_URL=... KGQL_TOKEN=... KGQL_NAMESPACE=... KGQL_JOB=... node normalised.mjs');
  process.exit(2);
}
const say = (line) => console.log(JSON.stringify(line));
setTimeout(() => {
  say({ step: 'timeout', seconds });
  process.exit(3);
}, seconds * 1000).unref();

const authorization = `Bearer ${token}`;
const ws = createClient({
  url: url.replace(/^http/, 'ws'),
  webSocketImpl: WebSocket,
  connectionParams: { Authorization: authorization },
});
const link = split(
  ({ query }) => {
    const definition = getMainDefinition(query);
    return definition.kind === 'OperationDefinition' && definition.operation === 'subscription';
  },
  new GraphQLWsLink(ws),
  new HttpLink({ uri: url, headers: { authorization } }),
);
const cache = new InMemoryCache();
const client = new ApolloClient({ cache, link });

const ONE = gql`
  query OneWorkload($namespace: String!, $job: String!) {
    workloadFor(namespace: $namespace, kind: "Job", name: $job) { id name status }
  }
`;
const PAGE = gql`
  query WorkloadPage($namespace: String!) {
    workloads(first: 100, namespace: $namespace) {
      edges { cursor node { id name priority } }
    }
  }
`;
const WATCHED = gql`
  query WatchedDiagnosis($namespace: String!, $job: String!) {
    diagnose(namespace: $namespace, kind: "Job", name: $job) { id stage summary }
  }
`;
const LIVE = gql`
  subscription LiveDiagnosis($namespace: String!, $job: String!) {
    diagnosis(namespace: $namespace, kind: "Job", name: $job) { id stage summary }
  }
`;

try {
  const one = await client.query({ query: ONE, variables: { namespace, job } });
  const page = await client.query({ query: PAGE, variables: { namespace } });
  const workload = one.data.workloadFor;
  const inPage = page.data.workloads.edges.map((e) => e.node).find((n) => n.id === workload.id);
  const key = cache.identify(workload);
  const entries = Object.entries(cache.extract()).filter(([k]) => k.startsWith('Workload:'));
  say({
    step: 'shared',
    key,
    pageKey: inPage ? cache.identify(inPage) : null,
    // The one entry holds the fields of both queries (status from the first, priority from
    // the second), and each query's root field points at it.
    entry: cache.extract()[key] ?? null,
    workloadEntries: entries.length,
    rootRefs: cache.extract().ROOT_QUERY,
  });

  const watched = client.watchQuery({ query: WATCHED, variables: { namespace, job } });
  let first = null;
  const seen = [];
  const refreshed = new Promise((resolve) => {
    watched.subscribe(({ data }) => {
      const stage = data?.diagnose?.stage;
      if (!stage) return;
      seen.push(stage);
      say({ step: 'watched', stage });
      if (first === null) first = stage;
      else if (stage !== first) resolve(stage);
    });
  });
  const pushed = [];
  let announced = false;
  client.subscribe({ query: LIVE, variables: { namespace, job } }).subscribe({
    next: ({ data, error }) => {
      if (error) say({ step: 'error', error: String(error) });
      const stage = data?.diagnosis?.stage;
      if (stage) pushed.push(stage);
      if (!announced && stage) {
        announced = true;
        say({ step: 'subscribed', stage, id: data.diagnosis.id });
      }
    },
    error: (error) => say({ step: 'error', error: String(error) }),
  });
  const stage = await refreshed;
  const diagnosisKeys = Object.keys(cache.extract()).filter((k) => k.startsWith('Diagnosis:'));
  say({ step: 'refreshed', stage, seen, pushed, diagnosisKeys });
} catch (error) {
  say({ step: 'error', error: String(error?.stack ?? error) });
  process.exitCode = 1;
} finally {
  client.stop();
  await ws.dispose();
  process.exit();
}
