// What an acpx run must show, read from its transcript (acpx --format json: both directions, one JSON-RPC
// message a line) and from what the mock model was sent.
//
//   node expect.mjs approve|deny|background TRANSCRIPT MOCK_RECORD WORKSPACE
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [scenario, transcript, record, ws] = process.argv.slice(2);
const lines = (f) => readFileSync(f, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
const messages = lines(transcript);
const sent = lines(record).map((r) => r.body);
const updates = messages.filter((m) => m.method === "session/update").map((m) => m.params.update);
const of = (kind) => updates.filter((u) => u.sessionUpdate === kind);
const prompt = messages.find((m) => m.method === "session/prompt");
const answer = messages.find((m) => m.id === prompt?.id && m.method === undefined);
const asked = messages.filter((m) => m.method === "session/request_permission");
const toolResults = sent.flatMap((b) => b.messages.at(-1).content).filter((c) => c.type === "tool_result");

let failed = 0;
function check(ok, what) {
  console.log(`expect(${scenario}): ${ok ? "ok" : "FAILED"}: ${what}`);
  if (!ok) failed += 1;
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const init = messages.find((m) => m.id === 0 && m.result)?.result;
check(init?.protocolVersion === 1 && init?.agentCapabilities?.loadSession === true, "initialize: v1 with loadSession");
check(init?.agentInfo?.name === "stepwise", "agentInfo names stepwise");
check(answer?.result?.stopReason === "end_turn", `the prompt ends with end_turn (${JSON.stringify(answer)})`);

if (scenario === "approve") {
  const text = of("agent_message_chunk").map((u) => u.content.text).join("");
  check(text.includes("Planning.") && text.includes("Done: the greeting says hello there."), "model text as message chunks");
  const plans = of("plan");
  check(plans.length === 2, `a plan update after each plan change (${plans.length})`);
  check(
    eq(plans[0]?.entries.map((e) => [e.content, e.status]), [["Fix the greeting", "in_progress"], ["Show it", "pending"]]),
    "the first plan: every entry with its status",
  );
  check(plans[1]?.entries.every((e) => e.status === "completed"), "the last plan: all completed");
  const calls = of("tool_call");
  check(eq(calls.map((c) => c.kind), ["think", "edit", "read", "execute", "think"]), "tool call kinds");
  check(eq(calls.slice(1, 4).map((c) => c.title), ["Edit greeting.txt", "Read greeting.txt", "Run cat greeting.txt > shown.txt"]), "titles name the path or command");
  check(calls[1]?.locations?.[0]?.path === join(ws, "greeting.txt"), "the edit's location is the absolute path");
  // Updates that end a call; the shell command's also had one moving it from pending to in_progress.
  const done = of("tool_call_update").filter((u) => u.status === "completed" || u.status === "failed");
  check(done.length === 5 && done.every((u) => u.status === "completed"), "every call completed");
  const shell = calls[3]?.toolCallId;
  // Its status changes (an update that only shows the terminal carries none).
  const shellStates = updates
    .filter((u) => u.toolCallId === shell && (u.status || u.sessionUpdate === "tool_call"))
    .map((u) => u.status ?? "pending");
  check(eq(shellStates, ["pending", "in_progress", "completed"]), `the shell call: pending until allowed (${shellStates})`);
  // acpx offers terminals: the command ran in one, and the call shows it.
  const create = messages.find((m) => m.method === "terminal/create");
  check(eq([create?.params.command, create?.params.args], ["bash", ["-c", "cat greeting.txt > shown.txt"]]), "terminal/create runs the command");
  const termId = messages.find((m) => m.id === create?.id && m.result)?.result?.terminalId;
  check(termId !== undefined && done[3]?.content?.[0]?.terminalId === termId, "the shell call shows its terminal");
  const termCalls = messages.filter((m) => m.method?.startsWith("terminal/") && m.params?.terminalId === termId).map((m) => m.method);
  check(eq(termCalls, ["terminal/wait_for_exit", "terminal/output", "terminal/release"]), `then wait, output, release (${termCalls})`);
  check(toolResults.some((r) => r.content === "(no output)" && r.is_error !== true), "the model reads the terminal's result");
  const commands = of("available_commands_update")[0]?.availableCommands?.map((c) => c.name);
  check(eq(commands, ["compact", "plan", "checkpoints", "rewind"]), `the agent's own commands are advertised (${commands})`);
  const diff = done[1]?.content?.find((c) => c.type === "diff");
  check(diff?.oldText === "hello world\n" && diff?.newText === "hello there\n", "the edit carries its diff");
  // acpx offers fs: the agent read and wrote through it.
  const fsCalls = messages.filter((m) => m.method?.startsWith("fs/")).map((m) => m.method);
  check(fsCalls.includes("fs/read_text_file") && fsCalls.includes("fs/write_text_file"), `files through the client (${fsCalls})`);
  check(asked.length === 1 && asked[0].params.toolCall.toolCallId === calls[3].toolCallId, "the shell command asked first");
  check(readFileSync(join(ws, "greeting.txt"), "utf8") === "hello there\n", "the file is edited");
  check(readFileSync(join(ws, "shown.txt"), "utf8") === "hello there\n", "the approved command ran");
  check(of("usage_update").length === 6, "a usage update per model answer");
} else if (scenario === "deny") {
  check(asked.length === 1, "the command asked for permission");
  const denied = toolResults.find((r) => r.content === "Error: Command denied by the user" && r.is_error === true);
  check(denied !== undefined, "the model is told the command was denied");
  check(!existsSync(join(ws, "marker.txt")), "the denied command did not run");
  check(of("tool_call_update")[0]?.status === "failed", "the denied call is failed");
  check(sent.length === 2, "the turn went on after the denial");
} else if (scenario === "background") {
  // The model's call, then the task as a tool call of its own, shown before the turn's answer (acpx exec
  // leaves once the turn ends; the task ends with the agent).
  const calls = of("tool_call");
  check(calls[0]?.title === "Run in background echo serving; exec sleep 300", `the model's call (${calls[0]?.title})`);
  const task = calls.find((c) => c.toolCallId.startsWith("background-bg-1-"));
  check(task !== undefined, `the task is its own tool call (${calls.map((c) => c.toolCallId)})`);
  check(task?.kind === "execute" && task?.status === "in_progress", `running, as an execute call (${task?.kind}, ${task?.status})`);
  check(task?.title === "Run in background echo serving; exec sleep 300 (bg-1)", `titled with its id (${task?.title})`);
  check(eq(task?.rawInput, { command: "echo serving; exec sleep 300", taskId: "bg-1" }), "its command and id");
  const shownAt = messages.findIndex((m) => m.params?.update?.toolCallId === task?.toolCallId);
  const answeredAt = messages.findIndex((m) => m.id === prompt?.id && m.method === undefined);
  check(shownAt >= 0 && shownAt < answeredAt, `shown before the turn's answer (${shownAt} < ${answeredAt})`);
  check(toolResults.some((r) => String(r.content).startsWith("Background task bg-1 started")), "the model reads the task's id");
  // It runs under stepwise's guard, never in one of acpx's terminals.
  const terminals = messages.filter((m) => m.method?.startsWith("terminal/")).map((m) => m.method);
  check(terminals.length === 0, `no client terminal (${terminals})`);
  check(asked.length === 1 && asked[0].params.toolCall.toolCallId === calls[0].toolCallId, "the command asked first");
} else {
  check(false, `unknown scenario ${scenario}`);
}
if (failed > 0) {
  console.error(`expect(${scenario}): ${failed} check(s) failed; transcript: ${transcript}`);
  process.exit(1);
}
