-- The server's questions about tool calls (`stepwise/ask`, declared in the client's capabilities): typed, so
-- what is shown comes from the kind and its fields (the command, the protected path, what the sandbox
-- stopped, the MCP tool), never from the wording. With the folder's chat in a window the question is drawn
-- there under the call and answered with `:Stepwise allow`, `:Stepwise allow session`, `:Stepwise deny`
-- (in the chat: <LocalLeader>a / s / d); otherwise vim.ui.select asks. A question leaves when its call
-- finishes or the run ends (the server withdrew it: the run was cancelled, or the wait timed out).
-- Questions are a session's (`workspace` and `session`): one from a session not in view, whose chat shows in no
-- window, is said with vim.notify and drawn in that session's chat (when it is made, too), not asked in a picker
-- that would seem to be about the session in view.
-- Requires no view: the chat says whether it shows a session (M.shown) and draws the `ask` / `asked` events.
local M = {}

local util = require('stepwise.util')
local events = require('stepwise.events')
local state = require('stepwise.state')

--- The answers, in the order they are offered (titles as the plain approval's).
M.CHOICES = {
  { choice = 'allow', title = 'Allow' },
  { choice = 'allowSession', title = 'Allow for this session' },
  { choice = 'deny', title = 'Deny' },
}

--- Whether a question of a session (its key, state.key) can be shown in a chat (set by the chat).
---@type fun(key: string?): boolean
M.shown = function()
  return false
end

---@class stepwise.Question
---@field params table the `stepwise/ask` params
---@field resolve fun(choice: string)
---@field done boolean?

---@type stepwise.Question[] oldest first
local pending = {}
local unsubscribe ---@type fun()[]?

--- The child agent asking (`subagent`), as the server's message names it: `[subagent sa-1: <description>]`.
local function asker(p)
  if type(p.subagent) ~= 'string' then
    return nil
  end
  local named = type(p.message) == 'string' and p.message:match('^(%[subagent ' .. vim.pesc(p.subagent) .. ':.-%]) ')
  return named or ('[subagent ' .. p.subagent .. ']')
end

--- What a question concerns, as lines: a title (naming the child agent that asks, if one does), the command or
--- path (in backticks), a detail.
---@param p table
---@return string[]
function M.lines(p)
  local out = M.what(p)
  local who = asker(p)
  if who and not out[1]:find(who, 1, true) then
    out[1] = who .. ' ' .. out[1]
  end
  return out
end

--- The question's own lines (M.lines without who asks).
function M.what(p)
  local s = function(v)
    return type(v) == 'string' and v or '?'
  end
  if p.kind == 'command' then
    return { 'Run this command?', '`' .. s(p.command) .. '`' }
  elseif p.kind == 'unsandboxed' then
    local stopped = type(p.stopped) == 'string' and p.stopped or 'a write or connection it does not allow'
    return {
      'The sandbox stopped this command. Run it outside the sandbox?',
      '`' .. s(p.command) .. '`',
      'the sandbox stopped: ' .. stopped,
    }
  elseif p.kind == 'protectedWrite' then
    local out = { 'Write a protected file?', '`' .. s(p.path) .. '`' }
    if type(p.why) == 'string' then
      out[#out + 1] = p.why
    end
    return out
  elseif p.kind == 'mcpTool' then
    return { 'Use the MCP tool ' .. s(p.tool) .. ' of ' .. s(p.server) .. '?' }
  end
  -- a kind this plugin does not know yet: the server's own line
  return { type(p.message) == 'string' and p.message or 'stepwise asks for your leave' }
end

--- The title of a choice (`withdrawn` when there is none).
function M.title(choice)
  for _, c in ipairs(M.CHOICES) do
    if c.choice == choice then
      return c.title
    end
  end
  return 'withdrawn'
end

---@param q stepwise.Question
---@param choice string? nil: withdrawn
local function finish(q, choice)
  if q.done then
    return
  end
  q.done = true
  for i, x in ipairs(pending) do
    if x == q then
      table.remove(pending, i)
      break
    end
  end
  events.emit('asked', { workspace = q.params.workspace, session = q.params.session, callId = q.params.callId, choice = choice })
  q.resolve(choice or 'deny')
end

--- A question whose call finished or whose run ended was withdrawn by the server.
local function subscribe()
  if unsubscribe then
    return
  end
  unsubscribe = {
    events.on('tool', function(d)
      for _, q in ipairs(vim.list_slice(pending)) do
        if d.phase == 'finished' and d.id ~= nil and d.id == q.params.callId and M.key(d) == M.key(q.params) then
          finish(q, nil)
        end
      end
    end),
    events.on('status', function(d)
      for _, q in ipairs(vim.list_slice(pending)) do
        if d.state == 'idle' and M.key(d) == M.key(q.params) then
          finish(q, nil)
        end
      end
    end),
  }
end

--- The key of the session a question is about.
---@param p table the `stepwise/ask` params
function M.key(p)
  return type(p.workspace) == 'string' and state.key(p.workspace, p.session) or nil
end

--- Answers the oldest open question of a session (its key; else the oldest of any); false when none waits.
---@param choice 'allow'|'allowSession'|'deny'
---@param key string?
---@return boolean
function M.answer(choice, key)
  local q = vim.iter(pending):find(function(x)
    return M.key(x.params) == key
  end) or pending[1]
  if q then
    finish(q, choice)
    return true
  end
  util.notify('no question waits for an answer', vim.log.levels.WARN)
  return false
end

--- The open questions (oldest first), for the chat and :Stepwise status.
function M.open()
  return vim.tbl_map(function(q)
    return q.params
  end, pending)
end

--- stepwise/ask: answered asynchronously (the handler runs in a coroutine since Neovim 0.11).
function M.on_ask(_, params)
  params = type(params) == 'table' and params or {}
  subscribe()
  local co, is_main = coroutine.running()
  local async = co and not is_main
  local result, yielded
  local q = { params = params }
  q.resolve = function(choice)
    result = { answer = choice }
    if yielded then
      vim.schedule(function()
        local ok, e = coroutine.resume(co, result)
        if not ok then
          util.notify('ask: ' .. tostring(e), vim.log.levels.ERROR)
        end
      end)
    end
  end
  pending[#pending + 1] = q
  local session = type(params.workspace) == 'string' and state.session(params.workspace, params.session) or nil
  if M.shown(M.key(params)) then
    events.emit('ask', params)
  elseif session and state.in_view(session) ~= session then
    util.notify(string.format('session %s asks: %s (:Stepwise allow | deny; :Stepwise sessions to switch to it)',
      state.label(session), table.concat(M.lines(params), ' ')), vim.log.levels.WARN)
    events.emit('ask', params)
  else
    local opts = {
      prompt = 'stepwise: ' .. table.concat(M.lines(params), ' '),
      kind = 'stepwise_approval',
      format_item = function(c)
        return c.title
      end,
    }
    vim.ui.select(M.CHOICES, opts, function(c)
      finish(q, type(c) == 'table' and c.choice or 'deny')
    end)
  end
  if result then
    return result
  end
  if not async then
    -- no coroutine to wait in (Neovim before 0.11) and no answer yet: refused rather than blocked
    finish(q, 'deny')
    return result
  end
  yielded = true
  return coroutine.yield()
end

return M
