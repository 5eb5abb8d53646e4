// Checks every message the agent sent against the ACP v1 JSON schema shipped in @agentclientprotocol/sdk.
//
//   node validate.mjs transcript.jsonl [...]
//
// A transcript holds JSON-RPC messages, one a line: either only the agent's (`{"from": "agent", "msg": ...}`
// lines, written by sdk-client.mjs), or both directions untagged (acpx --format json), where the sender is
// told by the method (agent methods) or by whose request a response answers. Each agent message must match
// the envelope ("Agent" in the schema) and, strictly, the definition of its own method: the envelope's
// unions also admit extension messages, which would let a message missing a required field pass.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import Ajv2020 from "ajv/dist/2020.js";

const require = createRequire(import.meta.url);
const schemaPath = require.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));

// The schema's numeric formats (int64, uint32, ...) are Rust's; the types and ranges are what is checked.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
ajv.addSchema(schema, "acp");
const check = (def) => ajv.getSchema(`acp#/$defs/${def}`) ?? fail(`the schema has no ${def}`);

// What the agent sends, by method; what it answers, by the client's method.
const AGENT_REQUESTS = {
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest",
  "fs/write_text_file": "WriteTextFileRequest",
  "terminal/create": "CreateTerminalRequest",
  "terminal/output": "TerminalOutputRequest",
  "terminal/wait_for_exit": "WaitForTerminalExitRequest",
  "terminal/kill": "KillTerminalRequest",
  "terminal/release": "ReleaseTerminalRequest",
};
const AGENT_NOTIFICATIONS = { "session/update": "SessionNotification" };
const RESPONSES = {
  initialize: "InitializeResponse",
  "session/new": "NewSessionResponse",
  "session/load": "LoadSessionResponse",
  "session/prompt": "PromptResponse",
  "session/list": "ListSessionsResponse",
  "session/resume": "ResumeSessionResponse",
  "session/close": "CloseSessionResponse",
  "session/set_mode": "SetSessionModeResponse",
};
const envelope = ajv.compile({ $ref: "acp#/anyOf/0" });

function fail(message) {
  console.error(`validate: ${message}`);
  process.exit(1);
}

/** The agent's messages of one transcript, each with the client method it answers, if any. */
function agentMessages(lines) {
  const out = [];
  const clientRequests = new Map(); // id -> method, for requests the client sent
  for (const line of lines) {
    const v = JSON.parse(line);
    if (v.from === "agent") {
      out.push({ msg: v.msg, answers: v.answers });
      continue;
    }
    if (v.from === "client") {
      continue;
    }
    const method = v.method;
    if (method !== undefined) {
      if (AGENT_REQUESTS[method] || AGENT_NOTIFICATIONS[method]) {
        out.push({ msg: v });
      } else if (v.id !== undefined) {
        clientRequests.set(JSON.stringify(v.id), method);
      }
      continue;
    }
    // A response: the agent's when it answers a request the client sent.
    const key = JSON.stringify(v.id);
    if (clientRequests.has(key)) {
      out.push({ msg: v, answers: clientRequests.get(key) });
      clientRequests.delete(key);
    }
  }
  return out;
}

let checked = 0;
let errors = 0;
const report = (where, msg, validator) => {
  errors += 1;
  console.error(`validate: ${where}: ${JSON.stringify(msg).slice(0, 400)}`);
  for (const e of (validator.errors ?? []).slice(0, 12)) {
    console.error(`  ${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
  }
};

const files = process.argv.slice(2);
if (files.length === 0) fail("usage: node validate.mjs transcript.jsonl [...]");
for (const file of files) {
  const lines = readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "");
  const messages = agentMessages(lines);
  if (messages.length === 0) fail(`${file}: no message from the agent`);
  for (const { msg, answers } of messages) {
    checked += 1;
    if (!envelope(msg)) {
      report(`${file}: not an ACP agent message`, msg, envelope);
      continue;
    }
    let def;
    let value;
    if (msg.method !== undefined) {
      def = AGENT_REQUESTS[msg.method] ?? AGENT_NOTIFICATIONS[msg.method];
      value = msg.params;
      if (!def) {
        report(`${file}: the agent sent an unexpected method ${msg.method}`, msg, {});
        continue;
      }
    } else if (msg.error !== undefined) {
      [def, value] = ["Error", msg.error];
    } else {
      def = RESPONSES[answers];
      value = msg.result;
      if (!def) {
        report(`${file}: an answer to an unexpected method ${answers}`, msg, {});
        continue;
      }
    }
    const validator = check(def);
    if (!validator(value)) report(`${file}: not a valid ${def}`, msg, validator);
  }
}
if (errors > 0) fail(`${errors} of ${checked} agent messages do not match the schema`);
console.log(`validate: ${checked} agent messages match the ACP v1 schema (${files.length} transcripts)`);
