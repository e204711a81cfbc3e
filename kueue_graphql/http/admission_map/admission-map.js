// <kueue-admission-map namespace="team-a" kind="job" name="my-job" endpoint="/graphql"
//                      auth="token|proxy">
// The admission path of one object drawn as a graph (cytoscape + dagre), its blocking object
// highlighted, a bar per flavor and resource, the next steps; redrawn on each `diagnosis` push.
//
// The token: with auth="proxy" (an auth proxy put an Authorization header on the page request)
// the element sends none: the proxy adds it to the page's own requests. Otherwise the user types
// it once per tab; it is kept in sessionStorage only (never localStorage, a cookie or the URL).
"use strict";

(function (global) {
  const { buildModel, HIDDEN } = global.KueueAdmissionMapModel;
  const { LiveSubscription } = global.KueueAdmissionMapSocket;
  const TOKEN_KEY = "kueue-graphql:admission-map:token";
  // Where this script came from: its style and GraphQL document lie beside it.
  const BASE = new URL(".", document.currentScript.src).href;
  // Cytoscape writes an inline <style> into <head> unless an element with this id exists; the
  // stylesheet link carries it (and the rule cytoscape would add), so a strict CSP holds.
  const STYLESHEET_ID = "__________cytoscape_stylesheet";

  if (global.cytoscape && global.cytoscapeDagre && !global.cytoscape.__kueueDagre) {
    global.cytoscape.use(global.cytoscapeDagre);
    global.cytoscape.__kueueDagre = true;
  }

  const GRAPH_STYLE = [
    {
      selector: "node",
      style: {
        shape: "round-rectangle",
        "background-color": "#eef3fb",
        "border-width": 1,
        "border-color": "#7a8ca8",
        label: "data(label)",
        "text-wrap": "wrap",
        "text-valign": "center",
        "font-size": 11,
        width: (node) => labelSize(node.data("label")).width,
        height: (node) => labelSize(node.data("label")).height,
        color: "#17233a",
      },
    },
    { selector: "node[state = 'hidden']", style: { "background-color": "#f1f1f1", "border-style": "dashed", color: "#666" } },
    { selector: "node[state = 'missing']", style: { "background-color": "#fff7e6", "border-style": "dotted" } },
    { selector: "node[role = 'sibling']", style: { "background-color": "#f4f9f0" } },
    { selector: "node[?blocking]", style: { "border-width": 4, "border-color": "#c62828", "background-color": "#fdecea" } },
    {
      selector: "edge",
      style: {
        width: 1.5,
        "line-color": "#9aa7bd",
        "target-arrow-color": "#9aa7bd",
        "target-arrow-shape": "triangle",
        "curve-style": "bezier",
        label: "data(label)",
        "font-size": 9,
        color: "#555",
        "text-background-color": "#fff",
        "text-background-opacity": 1,
      },
    },
  ];

  function element(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) {
      if (value !== null && value !== undefined) node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  // A node's box from its label (11px text), so no style needs cytoscape's deprecated "label" size.
  function labelSize(label) {
    const lines = String(label || "").split("\n");
    const longest = Math.max(...lines.map((line) => line.length));
    return { width: Math.max(60, longest * 6.3 + 20), height: lines.length * 14 + 14 };
  }

  function nodeLabel(node) {
    return [node.kind, node.name, node.detail].filter(Boolean).join("\n");
  }

  class KueueAdmissionMap extends HTMLElement {
    static get observedAttributes() {
      return ["namespace", "kind", "name", "endpoint"];
    }

    connectedCallback() {
      if (!this.built) this.build();
      this.restart();
    }

    disconnectedCallback() {
      if (this.live) this.live.stop();
      if (this.cy) this.cy.destroy();
      this.cy = null;
    }

    attributeChangedCallback() {
      if (this.built && this.isConnected) this.restart();
    }

    get subject() {
      return {
        namespace: this.getAttribute("namespace") || "",
        kind: this.getAttribute("kind") || "Job",
        name: this.getAttribute("name") || "",
      };
    }

    build() {
      this.built = true;
      this.updates = 0;
      this.classList.add("kam");
      if (!document.getElementById(STYLESHEET_ID)) {
        this.append(element("link", { rel: "stylesheet", id: STYLESHEET_ID, href: `${BASE}admission-map.css` }));
      }
      this.status = element("p", { class: "kam-status", role: "status" }, "connecting…");
      this.tokenForm = this.buildTokenForm();
      this.refusal = element("div", { class: "kam-refusal", role: "alert", hidden: "" });
      this.view = element("div", { class: "kam-view", hidden: "" });
      this.summary = element("div", { class: "kam-summary" });
      this.graph = element("div", { class: "kam-graph" });
      this.path = element("ol", { class: "kam-path" });
      this.quota = element("section", { class: "kam-quota" });
      this.steps = element("section", { class: "kam-steps" });
      this.view.append(this.summary, this.graph, this.quota, this.steps, element("details", { class: "kam-path-list" }, element("summary", {}, "The path as text"), this.path));
      this.append(this.status, this.tokenForm, this.refusal, this.view);
    }

    buildTokenForm() {
      const input = element("input", { type: "password", name: "token", autocomplete: "off", required: "", "aria-label": "bearer token" });
      const form = element(
        "form",
        { class: "kam-token", hidden: "" },
        element("label", {}, "Your bearer token (kept in this tab only): ", input),
        element("button", { type: "submit" }, "Show"),
      );
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const token = input.value.trim();
        input.value = "";
        if (!token) return;
        sessionStorage.setItem(TOKEN_KEY, token);
        form.hidden = true;
        this.restart();
      });
      return form;
    }

    token() {
      if (this.getAttribute("auth") === "proxy") return { needed: false, value: null };
      const value = sessionStorage.getItem(TOKEN_KEY);
      return { needed: !value, value };
    }

    async document() {
      if (!this.query) {
        const response = await fetch(`${BASE}admission-map.graphql`, { credentials: "omit" });
        if (!response.ok) throw new Error(`admission-map.graphql: HTTP ${response.status}`);
        this.query = await response.text();
      }
      return this.query;
    }

    async restart() {
      if (this.live) this.live.stop();
      this.live = null;
      const token = this.token();
      if (token.needed) {
        this.setStatus("needs a token", "Paste your bearer token to see the map.");
        this.tokenForm.hidden = false;
        return;
      }
      let query;
      try {
        query = await this.document();
      } catch (error) {
        this.setStatus("error", String(error.message || error));
        return;
      }
      this.setStatus("connecting", "connecting…");
      this.live = new LiveSubscription({
        endpoint: this.getAttribute("endpoint") || "/graphql",
        query,
        variables: this.subject,
        token: token.value,
        handlers: {
          onOpen: () => this.setStatus("subscribed", "waiting for the first answer…"),
          onNext: (payload) => this.show(buildModel(payload, this.subject)),
          onError: (errors) => this.show(buildModel({ errors }, this.subject)),
          onClose: (code, reason, final) => this.closed(code, reason, final),
        },
      });
      this.live.start();
    }

    closed(code, reason, final) {
      if (code === 4403 || code === 4401) {
        // The token was refused: forget it and ask again (never shown back).
        sessionStorage.removeItem(TOKEN_KEY);
        this.setStatus("unauthenticated", `the server refused the token (${code}): ${reason || "paste a valid one"}`);
        if (this.getAttribute("auth") !== "proxy") this.tokenForm.hidden = false;
        return;
      }
      if (this.dataset.state === "refused") return;
      this.setStatus(final ? "closed" : "reconnecting", final ? `disconnected (${code} ${reason})` : "reconnecting…");
    }

    setStatus(state, text) {
      this.dataset.state = state;
      this.status.textContent = text;
    }

    show(model) {
      this.updates += 1;
      this.dataset.updates = String(this.updates);
      this.model = model;
      if (model.refused) {
        this.view.hidden = true;
        this.view.replaceChildren();
        if (this.cy) this.cy.destroy();
        this.cy = null;
        this.refusal.hidden = false;
        this.refusal.replaceChildren(
          element("strong", {}, `Refused (${model.refused.code}): `),
          model.refused.message,
        );
        this.setStatus("refused", "refused");
        return;
      }
      this.refusal.hidden = true;
      this.view.hidden = false;
      this.setStatus("live", `live · update ${this.updates} at ${new Date().toLocaleTimeString()}`);
      this.renderSummary(model);
      this.renderGraph(model);
      this.renderPath(model);
      this.renderQuota(model.quota);
      this.renderSteps(model.nextSteps);
    }

    renderSummary(model) {
      this.summary.replaceChildren(
        element("p", { class: "kam-stage" }, element("span", { class: "kam-badge" }, model.stage), " look at: ", element("span", { class: "kam-badge" }, model.layer)),
        element("p", { class: "kam-text" }, model.summary),
      );
    }

    renderGraph(model) {
      if (!global.cytoscape) {
        this.graph.textContent = "the layout library did not load";
        return;
      }
      const elements = [
        ...model.nodes.map((node) => ({ group: "nodes", data: { ...node, label: nodeLabel(node) } })),
        ...model.edges.map((edge, index) => ({ group: "edges", data: { id: `e${index}`, ...edge } })),
      ];
      if (!this.cy) {
        this.cy = global.cytoscape({
          container: this.graph,
          style: GRAPH_STYLE,
          userZoomingEnabled: false,
          boxSelectionEnabled: false,
          autoungrabify: true,
        });
      }
      this.cy.elements().remove();
      this.cy.add(elements);
      this.cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 18, rankSep: 50, fit: true, padding: 12 }).run();
    }

    renderPath(model) {
      this.path.replaceChildren(
        ...model.nodes.map((node) =>
          element(
            "li",
            { "data-kind": node.kind, "data-name": node.name, "data-state": node.state, "data-blocking": String(node.blocking) },
            `${node.kind} ${node.name}`,
            node.detail ? ` (${node.detail.replace(/\n/g, "; ")})` : "",
            node.blocking ? " ← holds it" : "",
          ),
        ),
      );
    }

    renderQuota(quota) {
      const heading = element("h2", {}, "Quota", quota.verdict ? ` · ${quota.verdict}` : "");
      if (quota.hidden) {
        this.quota.replaceChildren(heading, element("p", { class: "kam-hidden", "data-hidden": "quota" }, `Quota: ${HIDDEN} (${quota.detail})`));
        return;
      }
      if (!quota.bars.length) {
        this.quota.replaceChildren(heading, element("p", {}, quota.detail || "no quota lines"));
        return;
      }
      const key = element("p", { class: "kam-key" });
      for (const [name, text] of [["requested", "requested"], ["reserved", "reserved"], ["free", "free now"], ["nominal", "nominal quota"], ["maximum", "max with borrowing"]]) {
        key.append(element("span", { class: `kam-${name}` }), text);
      }
      this.quota.replaceChildren(heading, key, ...quota.bars.map((bar) => this.bar(bar)));
    }

    bar(bar) {
      const a = bar.amounts;
      const scale = Math.max(a.requested || 0, a.maximum || 0, a.nominal || 0, (a.reserved || 0) + (a.free || 0), 1e-9);
      const percent = (value) => `${Math.min(100, Math.max(0, ((value || 0) / scale) * 100))}%`;
      const track = element("div", { class: "kam-track" });
      const reserved = element("div", { class: "kam-seg kam-reserved", title: `reserved ${bar.shown.reserved}` });
      reserved.style.width = percent(a.reserved);
      const free = element("div", { class: "kam-seg kam-free", title: `free now ${bar.shown.free}` });
      free.style.left = percent(a.reserved);
      free.style.width = percent(a.free);
      track.append(reserved, free);
      for (const [key, label] of [["nominal", "nominal"], ["maximum", "max"]]) {
        if (a[key] === null) continue;
        const mark = element("div", { class: `kam-mark kam-${key}`, title: `${label} ${bar.shown[key]}` });
        mark.style.left = percent(a[key]);
        track.append(mark);
      }
      const wanted = element("div", { class: "kam-track kam-wanted" });
      const requested = element("div", { class: "kam-seg kam-requested", title: `requested ${bar.shown.requested}` });
      requested.style.width = percent(a.requested);
      wanted.append(requested);
      const figures = [
        ["requested", bar.shown.requested],
        ["free now", bar.shown.free],
        ["reserved", bar.shown.reserved],
        ["nominal", bar.shown.nominal],
        ["borrowing limit", bar.shown.borrowingLimit],
        ["lending limit", bar.shown.lendingLimit],
        ["cohort can lend", bar.shown.cohortCanLend],
        ["max", bar.shown.maximum],
      ].filter(([, value]) => value !== null && value !== undefined);
      const legend = element("p", { class: "kam-figures" }, figures.map(([name, value]) => `${name} ${value}`).join(" · "));
      const limits = bar.limits.map((limit) => element("p", { class: limit.hidden ? "kam-hidden" : "kam-limit" }, limit.text));
      return element(
        "div",
        { class: "kam-bar", "data-flavor": bar.flavor, "data-resource": bar.resource, "data-verdict": bar.verdict, "data-nominal": bar.shown.nominal },
        element("h3", {}, `${bar.flavor} / ${bar.resource}`, element("span", { class: "kam-badge" }, bar.verdict), bar.limitedBy ? ` limited by ${bar.limitedBy}` : ""),
        wanted,
        track,
        legend,
        ...limits,
      );
    }

    renderSteps(steps) {
      this.steps.replaceChildren(
        element("h2", {}, "Next steps"),
        element("ol", {}, ...steps.map((step) => element("li", {}, step))),
      );
    }
  }

  if (!customElements.get("kueue-admission-map")) {
    customElements.define("kueue-admission-map", KueueAdmissionMap);
  }
})(window);
