// Adds a bearer token to every request it forwards to one target URL, for
// running the conformance suite's server scenarios (whose runner sends no
// credentials) against the node's own MCP servers, which need a tenant
// token. Plumbing, not a peer: bodies and answers (SSE streams included)
// pass through unchanged.
//
//   node bearer_proxy.mjs TARGET_URL TOKEN
//
// Listens on a kernel-picked loopback port and prints "listening PORT".
import http from "node:http";

const [target, token] = process.argv.slice(2);
if (!target || !token) {
  console.error("usage: node bearer_proxy.mjs TARGET_URL TOKEN");
  process.exit(2);
}
const base = new URL(target);
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, host: base.host, authorization: `Bearer ${token}` };
  const upstream = http.request(
    {
      host: base.hostname,
      port: base.port,
      method: req.method,
      path: base.pathname + base.search,
      headers,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
});
server.listen(0, "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
