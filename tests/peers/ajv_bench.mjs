// Ajv (the JSON Schema validator most MCP tooling uses) measured beside
// Voxos's own validator (transport/json_schema.hpp) in the same run, on the
// same schema and document files: bench/validation_bench.cpp starts it.
//
//   node ajv_bench.mjs DATA_DIR [--batch-ms N] [--batches N]
//
// DATA_DIR holds cases.json (see bench/data/validation/): each case a draft
// 2020-12 schema and documents marked valid or invalid. Every schema is
// compiled once with Ajv2020, twice: with the default options (the first
// error stops validation) and with allErrors (every error listed, as ours
// does). Each document is parsed once; then, per document:
//   validate_ns             validate(parsed object), default options
//   validate_all_errors_ns  the same with allErrors
//   parse_validate_ns       JSON.parse(text) + validate, default options
//   parse_validate_all_errors_ns  the same with allErrors
// Each figure is the fastest of --batches batches (default 7) of about
// --batch-ms ms (default 40), in ns per validation. A document whose result
// differs from its mark is reported with "agrees": false.
//
// Prints one JSON line: {"ajv_version","node_version","cases":[{"name",
// "documents":[{"name","valid","agrees",<the figures>}]}]}.

import { readFileSync } from "node:fs";
import { join } from "node:path";

import Ajv2020Module from "ajv/dist/2020.js";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;

function parseArgs(argv) {
  const args = { dir: undefined, batchMs: 40, batches: 7 };
  for (let idx = 0; idx < argv.length; ++idx) {
    const arg = argv[idx];
    if (arg === "--batch-ms") args.batchMs = Number(argv[++idx]);
    else if (arg === "--batches") args.batches = Number(argv[++idx]);
    else if (args.dir === undefined && !arg.startsWith("--")) args.dir = arg;
    else {
      console.error(`ajv_bench: unknown argument ${arg}`);
      process.exit(2);
    }
  }
  if (!args.dir || !(args.batchMs > 0) || !(args.batches > 0)) {
    console.error("usage: node ajv_bench.mjs DATA_DIR [--batch-ms N] [--batches N]");
    process.exit(2);
  }
  return args;
}

// A loop calling `fn` `iterations` times; answers ns per call. Each
// measurement gets a fresh copy, so V8's type feedback for the call site
// sees one function only (a shared loop turns polymorphic and deoptimises
// as the measured functions change, which adds microseconds per call).
const freshLoop = () =>
  new Function(
    "fn",
    "iterations",
    `let sink = 0;
     const t0 = process.hrtime.bigint();
     for (let idx = 0; idx < iterations; ++idx) sink += fn() ? 1 : 0;
     const ns = Number(process.hrtime.bigint() - t0) / iterations;
     if (sink < 0) throw new Error("unreachable"); // keeps the calls observable
     return ns;`,
  );

// Ns per call of `fn`: the fastest of `batches` batches of about `batchMs`
// each (the least disturbed by other processes on a shared machine; garbage
// collection inside a batch still counts). The batch size is calibrated
// first, which also warms up the JIT.
function nsPerCall(fn, batchMs, batches) {
  const loop = freshLoop();
  let iterations = 1;
  for (;;) {
    const ms = (loop(fn, iterations) * iterations) / 1e6;
    if (ms >= batchMs / 4) {
      iterations = Math.max(1, Math.round((iterations * batchMs) / ms));
      break;
    }
    iterations *= 2;
  }
  let best = Infinity;
  for (let batch = 0; batch < batches; ++batch) best = Math.min(best, loop(fn, iterations));
  return best;
}

const args = parseArgs(process.argv.slice(2));
const ajvVersion = JSON.parse(
  readFileSync(new URL("./node_modules/ajv/package.json", import.meta.url), "utf8"),
).version;
const manifest = JSON.parse(readFileSync(join(args.dir, "cases.json"), "utf8"));

const out = [];
for (const testCase of manifest.cases) {
  const schema = JSON.parse(readFileSync(join(args.dir, testCase.schema), "utf8"));
  const firstError = new Ajv2020().compile(schema);
  const allErrors = new Ajv2020({ allErrors: true }).compile(schema);
  const documents = [];
  for (const doc of testCase.documents) {
    const text = readFileSync(join(args.dir, doc.file), "utf8");
    const parsed = JSON.parse(text);
    const agrees = firstError(parsed) === doc.valid && allErrors(parsed) === doc.valid;
    documents.push({
      name: doc.name,
      valid: doc.valid,
      agrees,
      validate_ns: nsPerCall(() => firstError(parsed), args.batchMs, args.batches),
      validate_all_errors_ns: nsPerCall(() => allErrors(parsed), args.batchMs, args.batches),
      parse_validate_ns: nsPerCall(() => firstError(JSON.parse(text)), args.batchMs, args.batches),
      parse_validate_all_errors_ns: nsPerCall(
        () => allErrors(JSON.parse(text)),
        args.batchMs,
        args.batches,
      ),
    });
  }
  out.push({ name: testCase.name, documents });
}

console.log(JSON.stringify({ ajv_version: ajvVersion, node_version: process.version, cases: out }));
