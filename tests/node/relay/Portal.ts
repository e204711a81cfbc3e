// Operations a portal built with Relay would write over kueue-graphql's schema. Compiled by
// tests/unit/test_relay_compiler.py with relay-compiler (pinned in ../package-lock.json) over
// schema/schema.graphql: @refetchable needs the Node interface and Query.node(id:), @connection
// needs edges { cursor node } and pageInfo. Never run, only compiled.
import { graphql } from 'relay-runtime';

export const workload = graphql`
  fragment Portal_workload on Workload @refetchable(queryName: "PortalWorkloadRefetchQuery") {
    id
    name
    namespace
    status
    localQueue { id name }
    clusterQueue { id name cohort { id name } }
    diagnosis { id stage summary }
  }
`;

export const workloads = graphql`
  fragment Portal_workloads on Query
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 20 }
    cursor: { type: "String" }
    namespace: { type: "String" }
  )
  @refetchable(queryName: "PortalWorkloadsPaginationQuery") {
    workloads(first: $count, after: $cursor, namespace: $namespace)
    @connection(key: "Portal_workloads") {
      edges { cursor node { id ...Portal_workload } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

export const why = graphql`
  query PortalWhyQuery($namespace: String!, $job: String!) {
    diagnose(namespace: $namespace, kind: "Job", name: $job) {
      id
      stage
      summary
      blockingObject {
        __typename
        ... on Node { id }
        ... on KubernetesNode { name unschedulable }
      }
    }
    workloadFor(namespace: $namespace, kind: "Job", name: $job) { ...Portal_workload }
    ...Portal_workloads @arguments(namespace: $namespace)
  }
`;

export const byId = graphql`
  query PortalNodeQuery($id: ID!) {
    node(id: $id) {
      id
      __typename
      ...Portal_workload @alias
      ... on KubernetesNode { name allocatable { resource } }
    }
  }
`;

export const live = graphql`
  subscription PortalDiagnosisSubscription($namespace: String!, $job: String!) {
    diagnosis(namespace: $namespace, kind: "Job", name: $job) { id stage summary }
  }
`;
