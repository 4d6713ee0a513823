// Judges the checks a client conformance run wrote (`-o DIR`) by
// judge_checks.mjs: every scenario's success checks below by id, any
// FAILURE or WARNING a failure, the expected-failures ratchet under
// `client:` (an idle client "passes" several scenarios, so a pass alone
// proves nothing).
// Check ids (or names, where several checks share an id): tests/peers/CONFORMANCE.md, "Authorization scenarios".
//   node judge_client_checks.mjs OUTPUT_DIR REVISION EXPECTED_FAILURES_YML
import { judge } from "./judge_checks.mjs";

const [outDir, revision, expectedFile] = process.argv.slice(2);

const happy = [
  "authorization-server-metadata",
  "client-registration",
  "authorization-request",
  "token-request",
  "pkce-verifier-matches-challenge",
  "resource-parameter-matches-prm",
  "valid-bearer-token",
];
const resourceChecks = [
  "token-endpoint-auth-method",
  "resource-parameter-in-authorization",
  "resource-parameter-in-token",
  "resource-parameter-consistency",
  "resource-parameter-matches-prm",
  "valid-bearer-token",
];
const stateless = revision === "2026-07-28";
const required = {
  initialize: ["mcp-client-initialization"],
  tools_call: ["tool-add-numbers"],
  "sse-retry": ["client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"],
  "elicitation-sep1034-client-defaults": [
    "client-elicitation-sep1034-string-default",
    "client-elicitation-sep1034-integer-default",
    "client-elicitation-sep1034-number-default",
    "client-elicitation-sep1034-enum-default",
    "client-elicitation-sep1034-boolean-default",
  ],
  "request-metadata": [
    "sep-2575-http-client-sends-version-header",
    "sep-2575-client-populates-meta",
    "sep-2575-client-sends-client-info",
    "sep-2575-http-version-header-matches-meta",
  ],
  "sep-2322-client-request-state": [
    "sep-2322-client-request-state-echoed",
    "sep-2322-client-jsonrpc-id-different",
    "sep-2322-client-no-state-omitted",
    "sep-2322-client-parallel-isolation",
  ],
    // By check name: these checks share one id.
  "http-standard-headers": [
    "ClientMcpMethodHeader_tools_list",
    "ClientMcpMethodHeader_tools_call",
    "ClientMcpNameHeader_tools_call",
  ],
  "http-custom-headers": ["sep-2243-client-mirrors-designated-params", "sep-2243-client-encode-values"],
  "http-invalid-tool-headers": ["sep-2243-client-reject-invalid-tool"],
  "json-schema-ref-no-deref": ["sep-2106-no-network-ref-deref"],
  "json-schema-2020-12-preservation": [],
  "auth/metadata-default": ["prm-pathbased-requested", ...happy],
  "auth/metadata-var1": ["prm-pathbased-requested", ...happy],
  "auth/metadata-var2": happy,
  "auth/metadata-var3": happy,
  "auth/basic-cimd": ["cimd-client-id-used", "token-request", "valid-bearer-token"],
  "auth/scope-from-www-authenticate": ["scope-from-www-authenticate", "valid-bearer-token"],
  "auth/scope-from-scopes-supported": ["scope-from-scopes-supported", "valid-bearer-token"],
  "auth/scope-omitted-when-undefined": ["scope-omitted-when-undefined", "valid-bearer-token"],
  "auth/scope-step-up": [
    "scope-step-up-initial",
    "scope-step-up-escalation",
    ...(stateless ? ["sep-2350-scope-union-on-reauth"] : []),
    "valid-bearer-token",
  ],
  "auth/scope-retry-limit": ["scope-retry-limit"],
  "auth/token-endpoint-auth-basic": resourceChecks,
  "auth/token-endpoint-auth-post": resourceChecks,
  "auth/token-endpoint-auth-none": resourceChecks,
  "auth/pre-registration": ["pre-registration-auth", "valid-bearer-token"],
  "auth/resource-mismatch": ["prm-pathbased-requested", "resource-mismatch-rejected"],
  "auth/offline-access-scope": ["authorization-request", "valid-bearer-token"],
  "auth/offline-access-not-supported": ["sep-2207-offline-access-not-requested", "valid-bearer-token"],
  "auth/authorization-server-migration": [
    "sep-2352-reregister-on-as-change",
    "sep-2352-no-reuse-on-as-change",
    "sep-2352-no-cross-as-credential-reuse",
    "valid-bearer-token",
  ],
  "auth/iss-supported": ["sep-2468-client-compare-iss-supported", "valid-bearer-token"],
  "auth/iss-not-advertised": ["sep-2468-client-proceed-no-iss", "valid-bearer-token"],
  "auth/iss-supported-missing": ["sep-2468-client-reject-missing-iss"],
  "auth/iss-wrong-issuer": ["sep-2468-client-compare-iss-supported"],
  "auth/iss-unexpected": ["sep-2468-client-compare-iss-unadvertised"],
  "auth/iss-normalized": ["sep-2468-client-no-normalization"],
  "auth/metadata-issuer-mismatch": ["sep-2468-client-validate-metadata-issuer"],
  "auth/client-credentials-jwt": ["client-credentials-jwt-verified", "valid-bearer-token"],
  "auth/client-credentials-basic": ["client-credentials-basic-auth", "valid-bearer-token"],
  "auth/enterprise-managed-authorization": [
    "complete-flow-token-exchange",
    "complete-flow-jwt-bearer",
    "valid-bearer-token",
  ],
  "auth/wif-jwt-bearer": ["wif-assertion-verified", "valid-bearer-token"],
  "auth/dpop": [
    "sep-1932-client-token-request-proof",
    "sep-1932-client-dpop-auth-scheme",
    "sep-1932-client-fresh-proof",
  ],
  "auth/dpop-nonce": [
    "sep-1932-client-token-request-proof",
    "sep-1932-client-dpop-auth-scheme",
    "sep-1932-client-fresh-proof",
    "sep-1932-client-as-nonce",
    "sep-1932-client-rs-nonce",
  ],
};

judge({ outDir, revision, expectedFile, mode: "client", required });
