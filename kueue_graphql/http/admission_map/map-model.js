// The admission map's model: one `diagnosis` push ({data, errors}) -> the nodes and edges of the
// admission path, the quota bars and the next steps. Pure: no DOM, no network.
//
// What the caller may not read is never filled in: a FORBIDDEN error (or a null the API returns
// for a hidden name) becomes a node or a line marked hidden, labelled "hidden from you".
"use strict";

(function (global) {
  const HIDDEN = "hidden from you";

  function errorsUnder(errors, prefix) {
    return (errors || []).filter(
      (error) =>
        Array.isArray(error.path) &&
        prefix.every((part, index) => error.path[index] === part),
    );
  }

  function codeUnder(errors, prefix) {
    const found = errorsUnder(errors, prefix)[0];
    return found ? (found.extensions && found.extensions.code) || "ERROR" : null;
  }

  function amount(value) {
    if (!value) return null;
    const number = Number(value.amount);
    return Number.isFinite(number) ? number : null;
  }

  function quantity(value) {
    return value ? value.quantity : null;
  }

  class Builder {
    constructor() {
      this.nodes = [];
      this.edges = [];
    }

    add(node) {
      const existing = this.nodes.find((other) => other.id === node.id);
      if (existing) return existing;
      const added = { state: "ok", blocking: false, detail: "", ...node };
      this.nodes.push(added);
      return added;
    }

    link(source, target, label) {
      if (source && target) this.edges.push({ source, target, label: label || "" });
    }
  }

  // The object asked about, when it is not the Workload itself (kind "Workload").
  function ownerNode(builder, diagnosis, subject) {
    const owner = diagnosis.owner;
    if (!owner && subject.kind.toLowerCase() === "workload") return null;
    const { kind, name } = owner || subject;
    return builder.add({ id: `${kind}/${name}`, kind, name }).id;
  }

  // A node the answer has no object for: hidden when the API refused it, else missing.
  function absentNode(builder, errors, kind, field, missingName) {
    const hidden = codeUnder(errors, ["diagnosis", field]) === "FORBIDDEN";
    return builder.add({
      id: `${kind}/?`,
      kind,
      name: hidden ? HIDDEN : missingName,
      state: hidden ? "hidden" : "missing",
    }).id;
  }

  function workloadNode(builder, diagnosis, errors) {
    if (!diagnosis.workload) return absentNode(builder, errors, "Workload", "workload", "none yet");
    const name = diagnosis.workload.name;
    return builder.add({ id: `Workload/${name}`, kind: "Workload", name }).id;
  }

  function localQueueNode(builder, diagnosis, errors) {
    const queue = diagnosis.localQueue;
    if (!queue) {
      if (diagnosis.stage === "NOT_MANAGED" && !codeUnder(errors, ["diagnosis", "localQueue"])) {
        return null;
      }
      return absentNode(builder, errors, "LocalQueue", "localQueue", "none");
    }
    const stopped = queue.stopPolicy && queue.stopPolicy !== "None";
    return builder.add({
      id: `LocalQueue/${queue.name}`,
      kind: "LocalQueue",
      name: queue.name,
      detail: stopped ? `stopPolicy ${queue.stopPolicy}` : "",
    }).id;
  }

  function clusterQueueNode(builder, diagnosis, errors) {
    const queue = diagnosis.clusterQueue;
    const name =
      (queue && queue.name) || (diagnosis.localQueue && diagnosis.localQueue.clusterQueueName);
    const code = codeUnder(errors, ["diagnosis", "clusterQueue"]);
    if (!name) {
      if (code !== "FORBIDDEN") return { id: null, readable: false };
      const id = builder.add({ id: "ClusterQueue/?", kind: "ClusterQueue", name: HIDDEN, state: "hidden" }).id;
      return { id, readable: false };
    }
    let state = "ok";
    let detail = "";
    if (code === "FORBIDDEN") {
      state = "hidden";
      detail = `its settings: ${HIDDEN}`;
    } else if (code === "NOT_FOUND") {
      state = "missing";
      detail = "does not exist";
    } else if (queue && queue.stopPolicy && queue.stopPolicy !== "None") {
      detail = `stopPolicy ${queue.stopPolicy}`;
    }
    const id = builder.add({ id: `ClusterQueue/${name}`, kind: "ClusterQueue", name, state, detail }).id;
    return { id, readable: code === null };
  }

  function lends(member) {
    const parts = [];
    for (const group of member.resourceGroups || []) {
      for (const flavor of group.flavors || []) {
        for (const resource of flavor.resources || []) {
          const limit = resource.lendingLimitValue;
          parts.push(
            `${flavor.name}/${resource.name}: ${limit ? `lends at most ${limit.quantity}` : "lends what it does not use"}`,
          );
        }
      }
    }
    return parts.join("\n");
  }

  function cohortNodes(builder, diagnosis, errors, queue) {
    if (!queue.id) return;
    const cohortErrors = codeUnder(errors, ["diagnosis", "clusterQueue", "cohort"]);
    if (cohortErrors === "FORBIDDEN") {
      const id = builder.add({ id: "Cohort/?", kind: "Cohort", name: HIDDEN, state: "hidden" }).id;
      builder.link(queue.id, id, "in cohort");
      return;
    }
    const cohort = diagnosis.clusterQueue && diagnosis.clusterQueue.cohort;
    if (!cohort) return;
    let child = queue.id;
    let current = cohort;
    let label = "in cohort";
    while (current) {
      const id = builder.add({ id: `Cohort/${current.name}`, kind: "Cohort", name: current.name }).id;
      builder.link(child, id, label);
      child = id;
      label = "parent";
      current = current.parent;
    }
    const cohortId = `Cohort/${cohort.name}`;
    if (codeUnder(errors, ["diagnosis", "clusterQueue", "cohort", "members"]) === "FORBIDDEN") {
      const id = builder.add({ id: "ClusterQueue/?members", kind: "ClusterQueue", name: `other members: ${HIDDEN}`, state: "hidden" }).id;
      builder.link(id, cohortId, "member");
      return;
    }
    const members = cohort.members || { nodes: [], totalCount: 0 };
    for (const member of members.nodes) {
      if (`ClusterQueue/${member.name}` === queue.id) continue;
      const id = builder.add({
        id: `ClusterQueue/${member.name}`,
        kind: "ClusterQueue",
        name: member.name,
        detail: lends(member),
        role: "sibling",
      }).id;
      builder.link(id, cohortId, "lends to");
    }
    const unnamed = members.totalCount - members.nodes.length;
    if (unnamed > 0) {
      const id = builder.add({ id: "ClusterQueue/+more", kind: "ClusterQueue", name: `${unnamed} more`, state: "hidden" }).id;
      builder.link(id, cohortId, "member");
    }
  }

  function flavorNodes(builder, diagnosis, queueId) {
    const quota = diagnosis.quota || { lines: [] };
    if (quota.visibility === "FORBIDDEN") {
      const id = builder.add({ id: "ResourceFlavor/?", kind: "ResourceFlavor", name: HIDDEN, state: "hidden" }).id;
      builder.link(queueId, id, "flavors");
      return;
    }
    for (const flavor of new Set(quota.lines.map((line) => line.flavor))) {
      const id = builder.add({ id: `ResourceFlavor/${flavor}`, kind: "ResourceFlavor", name: flavor }).id;
      builder.link(queueId, id, "flavor");
    }
  }

  function podNodes(builder, diagnosis, workloadId) {
    for (const entry of diagnosis.pods || []) {
      const pod = builder.add({
        id: `Pod/${entry.pod.name}`,
        kind: "Pod",
        name: entry.pod.name,
        detail: [entry.phase, entry.scheduledReason].filter(Boolean).join(", "),
      }).id;
      builder.link(workloadId, pod, "Pods");
      if (entry.nodeName) {
        const node = builder.add({ id: `Node/${entry.nodeName}`, kind: "Node", name: entry.nodeName }).id;
        builder.link(pod, node, "on");
      } else {
        const node = builder.add({ id: `Node/?${entry.pod.name}`, kind: "Node", name: "not placed", state: "missing" }).id;
        builder.link(pod, node, "on");
      }
    }
  }

  // The blocking object: highlighted where it is on the path, else added beside its queue.
  function markBlocking(builder, diagnosis, anchors) {
    const ref = diagnosis.blockingRef;
    if (!ref) return;
    let node = builder.nodes.find((candidate) => candidate.kind === ref.kind && candidate.name === ref.name);
    if (!node) {
      node = builder.add({ id: `${ref.kind}/${ref.name}`, kind: ref.kind, name: ref.name });
      builder.link(anchors.clusterQueue || anchors.workload, node.id, "needs");
    }
    node.blocking = true;
  }

  function bars(quota) {
    return (quota.lines || []).map((line) => ({
      flavor: line.flavor,
      resource: line.resource,
      verdict: line.verdict,
      limitedBy: line.limitedBy,
      amounts: {
        requested: amount(line.requested),
        reserved: amount(line.reserved),
        free: amount(line.availableNow),
        nominal: amount(line.nominalQuota),
        maximum: amount(line.maximumCapacity),
        borrowingLimit: amount(line.borrowingLimit),
        lendingLimit: amount(line.lendingLimit),
        cohortCanLend: amount(line.cohortCanLend),
      },
      shown: {
        requested: quantity(line.requested),
        reserved: quantity(line.reserved),
        free: quantity(line.availableNow),
        nominal: quantity(line.nominalQuota),
        maximum: quantity(line.maximumCapacity),
        borrowingLimit: quantity(line.borrowingLimit),
        lendingLimit: quantity(line.lendingLimit),
        cohortCanLend: quantity(line.cohortCanLend),
      },
      limits: (line.bindingLimits || []).map((limit) => ({
        text: `${limit.limit} ${limit.value.quantity} of ${limit.kind} ${limit.name === null ? HIDDEN : limit.name}`,
        hidden: limit.name === null,
      })),
    }));
  }

  function refusal(payload) {
    const errors = payload.errors || [];
    const top = errors.find((error) => !error.path || error.path.length <= 1) || errors[0];
    return {
      code: (top && top.extensions && top.extensions.code) || "ERROR",
      message: top ? top.message : "no answer",
    };
  }

  // payload: a graphql-transport-ws `next` payload; subject: {namespace, kind, name}.
  function buildModel(payload, subject) {
    const diagnosis = payload && payload.data && payload.data.diagnosis;
    if (!diagnosis) return { refused: refusal(payload || {}) };
    const errors = payload.errors || [];
    const builder = new Builder();
    const owner = ownerNode(builder, diagnosis, subject);
    const workload = workloadNode(builder, diagnosis, errors);
    builder.link(owner, workload, "Workload");
    const localQueue = localQueueNode(builder, diagnosis, errors);
    builder.link(workload, localQueue, "queued in");
    const queue = clusterQueueNode(builder, diagnosis, errors);
    builder.link(localQueue || workload, queue.id, "ClusterQueue");
    cohortNodes(builder, diagnosis, errors, queue);
    if (queue.id) flavorNodes(builder, diagnosis, queue.id);
    podNodes(builder, diagnosis, workload);
    markBlocking(builder, diagnosis, { clusterQueue: queue.id, workload });
    const quota = diagnosis.quota || { visibility: "UNAVAILABLE", detail: "", lines: [] };
    return {
      refused: null,
      stage: diagnosis.stage,
      layer: diagnosis.layer,
      summary: diagnosis.summary,
      nodes: builder.nodes,
      edges: builder.edges,
      quota: {
        visibility: quota.visibility,
        verdict: quota.verdict,
        detail: quota.detail,
        hidden: quota.visibility === "FORBIDDEN",
        bars: bars(quota),
      },
      nextSteps: diagnosis.nextSteps || [],
    };
  }

  global.KueueAdmissionMapModel = { buildModel, HIDDEN };
})(window);
