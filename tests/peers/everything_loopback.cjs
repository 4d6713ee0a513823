// A --require preload for @modelcontextprotocol/server-everything, which
// calls app.listen(PORT) and so binds every interface:
//   - every TCP listen without a host is bound to 127.0.0.1;
//   - once the first one listens, "listening <port>" goes to stdout, the
//     only line this process writes there;
//   - console.log / console.info go to stderr, so the server's line per
//     request never fills a stdout pipe that nobody reads.
//
//   PORT=0 node -r ./everything_loopback.cjs \
//     node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp

"use strict";

const fs = require("node:fs");
const net = require("node:net");

const LOOPBACK = "127.0.0.1";

console.log = console.error;
console.info = console.error;

let announced = false;
function announce(server) {
  if (announced) return;
  const address = server.address();
  if (address === null || typeof address !== "object") return;
  announced = true;
  fs.writeSync(1, `listening ${address.port}\n`);
}

// listen(port[, host][, backlog][, cb]) or listen({port, host}, cb): the
// host becomes the loopback host, given or not; pipes and handles pass through.
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const isPort = (value) =>
    typeof value === "number" || (typeof value === "string" && /^\d+$/.test(value));
  if (first !== null && typeof first === "object" && !(first instanceof net.Server)) {
    if (first.path === undefined && first.handle === undefined && first.fd === undefined)
      args[0] = { ...first, host: LOOPBACK };
  } else if (isPort(first) || first === undefined || typeof first === "function") {
    const port = isPort(first) ? Number(first) : 0;
    const rest = isPort(first) ? args.slice(1) : args.slice(first === undefined ? 1 : 0);
    if (typeof rest[0] === "string") rest[0] = LOOPBACK;
    else rest.unshift(LOOPBACK);
    args = [port, ...rest];
  }
  this.once("listening", () => announce(this));
  return listen.apply(this, args);
};
