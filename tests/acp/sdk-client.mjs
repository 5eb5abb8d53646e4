// The official TypeScript SDK's client against `stepwise acp`: session modes (plan first), cancel mid shell command, then load the
// saved session in a second agent process and continue it, /compact it, list it and close it.
//
//   node sdk-client.mjs STEPWISE_BIN WORKSPACE TRANSCRIPT
//
// The model (the mock) and the state directory come from the environment. Every line the agent writes is
// appended to TRANSCRIPT as {"from": "agent", "msg": ..., "answers": method} for validate.mjs.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [bin, ws, transcript] = process.argv.slice(2);
if (!transcript) {
  console.error("usage: node sdk-client.mjs STEPWISE_BIN WORKSPACE TRANSCRIPT");
  process.exit(2);
}
const LONG_COMMAND = "echo $$ > bash.pid; sleep 300 & echo $! > bg.pid; wait";

function check(ok, what) {
  if (!ok) {
    console.error(`sdk-client: FAILED: ${what}`);
    process.exit(1);
  }
  console.log(`sdk-client: ok: ${what}`);
}

/** Polls for a condition (a file a shell writes, a process exiting), up to `ms`. */
async function waitFor(cond, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return cond();
}

const alive = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZXx]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
};

/** Starts `stepwise acp`, taps its output into the transcript, and serves it an SDK client. */
function startAgent() {
  const child = spawn(bin, ["acp"], { cwd: ws, stdio: ["pipe", "pipe", "inherit"] });
  const requests = new Map(); // our request ids -> method, so the transcript says what each answer answers
  const toAgent = new TransformStream({
    transform(msg, ctl) {
      if (msg.method && msg.id !== undefined) requests.set(JSON.stringify(msg.id), msg.method);
      ctl.enqueue(msg);
    },
  });
  let pending = "";
  child.stdout.on("data", (chunk) => {
    pending += chunk.toString("utf8");
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line.trim() === "") continue;
      const msg = JSON.parse(line);
      const answers = msg.method === undefined ? requests.get(JSON.stringify(msg.id)) : undefined;
      appendFileSync(transcript, JSON.stringify({ from: "agent", msg, answers }) + "\n");
    }
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  toAgent.readable.pipeTo(stream.writable);
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stream: { readable: stream.readable, writable: toAgent.writable }, exited };
}

const updates = [];
let onUpdate = () => {};
const app = () =>
  acp
    .client({ name: "stepwise-sdk-test" })
    .onRequest("session/request_permission", () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }))
    .onNotification("session/update", ({ params }) => {
      updates.push(params.update);
      onUpdate(params.update);
    });

// 1. Cancel mid shell command.
let sessionId;
{
  const agent = startAgent();
  await app().connectWith(agent.stream, async (ctx) => {
    const init = await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    check(init.protocolVersion === 1 && init.agentCapabilities?.loadSession === true, "initialize: v1, loadSession");
    const created = await ctx.request("session/new", { cwd: ws, mcpServers: [] });
    ({ sessionId } = created);
    check(
      await waitFor(() => updates.some((u) => u.sessionUpdate === "available_commands_update")),
      "session/new is followed by the agent's commands",
    );
    const modeIds = (created.modes?.availableModes ?? []).map((m) => m.id).join(",");
    check(created.modes?.currentModeId === "default" && modeIds === "default,plan", "session/new offers the modes default and plan");
    await ctx.request("session/set_mode", { sessionId, modeId: "plan" });
    const refused = await ctx.request("session/set_mode", { sessionId, modeId: "yolo" }).then(() => null, (e) => e);
    check(refused?.code === -32602, "session/set_mode refuses an unknown mode");
    await ctx.request("session/set_mode", { sessionId, modeId: "default" });
    const running = new Promise((resolve) => {
      onUpdate = (u) => u.sessionUpdate === "tool_call" && u.kind === "execute" && resolve();
    });
    const prompt = ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "wait for it" }] });
    await running;
    const pidsThere = await waitFor(() => existsSync(join(ws, "bg.pid")));
    check(pidsThere, "the shell command is running");
    const shell = Number(readFileSync(join(ws, "bash.pid"), "utf8"));
    const bg = Number(readFileSync(join(ws, "bg.pid"), "utf8"));
    const t0 = Date.now();
    await ctx.notify("session/cancel", { sessionId });
    const answer = await prompt;
    const took = Date.now() - t0;
    check(answer.stopReason === "cancelled", `cancel answers stopReason cancelled (${answer.stopReason})`);
    check(took < 1000, `within a second (${took} ms)`);
    check(await waitFor(() => !alive(shell) && !alive(bg), 3000), "the shell and its child are gone");
  });
  agent.child.stdin.end();
  check((await agent.exited) === 0, "the agent exits 0 when the client closes");
}

// 2. Load it in a new process: the history comes back, and the conversation goes on.
{
  const agent = startAgent();
  await app().connectWith(agent.stream, async (ctx) => {
    await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    updates.length = 0;
    onUpdate = () => {};
    await ctx.request("session/load", { sessionId, cwd: ws, mcpServers: [] });
    const kinds = updates.map((u) => u.sessionUpdate);
    check(kinds[0] === "user_message_chunk" && updates[0].content.text === "wait for it", "load replays the prompt");
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    check(call?.kind === "execute" && call.title.startsWith("Run "), "load replays the shell call");
    const result = updates.find((u) => u.sessionUpdate === "tool_call_update");
    check(result?.status === "failed", "load replays its cancelled result");
    updates.length = 0;
    const answer = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go on" }] });
    check(answer.stopReason === "end_turn", "the loaded session continues");
    const said = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text);
    check(said.join("").includes("Continued after loading."), "with the model's answer");

    // Our own command: the agent compacts, the model is asked only for the summary.
    updates.length = 0;
    const compacted = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/compact" }] });
    const told = updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text).join("");
    check(compacted.stopReason === "end_turn" && told.startsWith("Compacted to about"), `/compact is run by the agent (${told})`);

    // The saved session is listed for its folder, titled by its first prompt; then closed.
    const listed = await ctx.request("session/list", { cwd: ws });
    const mine = listed.sessions.find((s) => s.sessionId === sessionId);
    check(mine?.title === "wait for it" && typeof mine.updatedAt === "string", "session/list shows it");
    await ctx.request("session/close", { sessionId });
    const gone = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "x" }] }).then(
      () => false,
      (e) => e.code === -32002,
    );
    check(gone, "a closed session is gone");
  });
  agent.child.stdin.end();
  check((await agent.exited) === 0, "the second agent exits 0");
}
