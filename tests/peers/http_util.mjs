// HTTP helpers the Node test peers share (sdk_peer.mjs, oauth_peer.mjs).

// The largest request body a peer reads.
export const BODY_LIMIT = 4 * 1024 * 1024;

// A request's body as text; rejects past BODY_LIMIT (and drops the request).
export function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        reject(new Error("body too large"));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export function sendJson(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

// A JSON-RPC error answer without an id (the request's could not be read).
export const rpcError = (code, message) => ({ jsonrpc: "2.0", error: { code, message }, id: null });
