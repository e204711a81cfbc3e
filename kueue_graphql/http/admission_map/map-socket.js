// One subscription over graphql-transport-ws (the protocol kueue-graphql speaks on /graphql):
// connection_init (with the token, if the page has one), subscribe, then each `next` to onNext.
// Reconnects after an unexpected close, a bounded number of times with growing pauses.
"use strict";

(function (global) {
  const PROTOCOL = "graphql-transport-ws";
  const MAX_RETRIES = 8;
  // graphql-transport-ws and kueue-graphql: the token was refused, or access is gone.
  const FINAL_CLOSE_CODES = new Set([4400, 4401, 4403, 4429, 4409]);

  function socketUrl(endpoint) {
    const url = new URL(endpoint, document.baseURI);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return url.href;
  }

  class LiveSubscription {
    // handlers: {onNext(payload), onError(errors), onClose(code, reason, final), onOpen()}
    constructor({ endpoint, query, variables, token, handlers }) {
      this.url = socketUrl(endpoint);
      this.query = query;
      this.variables = variables;
      this.token = token;
      this.handlers = handlers;
      this.retries = 0;
      this.stopped = false;
      this.socket = null;
      this.timer = null;
    }

    start() {
      this.stopped = false;
      const socket = new WebSocket(this.url, PROTOCOL);
      this.socket = socket;
      socket.onopen = () => {
        const payload = this.token ? { Authorization: `Bearer ${this.token}` } : {};
        socket.send(JSON.stringify({ type: "connection_init", payload }));
      };
      socket.onmessage = (event) => this.receive(socket, event.data);
      socket.onclose = (event) => this.closed(socket, event.code, event.reason);
    }

    receive(socket, text) {
      let message;
      try {
        message = JSON.parse(text);
      } catch (notJson) {
        return;
      }
      if (message.type === "connection_ack") {
        this.retries = 0;
        socket.send(
          JSON.stringify({
            id: "admission-map",
            type: "subscribe",
            payload: { query: this.query, variables: this.variables, operationName: "AdmissionMap" },
          }),
        );
        this.handlers.onOpen();
      } else if (message.type === "ping") {
        socket.send(JSON.stringify({ type: "pong" }));
      } else if (message.type === "next") {
        this.handlers.onNext(message.payload);
      } else if (message.type === "error") {
        this.handlers.onError(message.payload);
      } else if (message.type === "complete") {
        this.handlers.onClose(1000, "the server ended the stream", true);
        this.stop();
      }
    }

    closed(socket, code, reason) {
      if (socket !== this.socket || this.stopped) return;
      const final = FINAL_CLOSE_CODES.has(code) || this.retries >= MAX_RETRIES;
      this.handlers.onClose(code, reason, final);
      if (final) return;
      this.retries += 1;
      this.timer = setTimeout(() => this.start(), Math.min(30000, 500 * 2 ** this.retries));
    }

    stop() {
      this.stopped = true;
      clearTimeout(this.timer);
      if (this.socket && this.socket.readyState <= WebSocket.OPEN) this.socket.close(1000);
      this.socket = null;
    }
  }

  global.KueueAdmissionMapSocket = { LiveSubscription };
})(window);
