-- The children of a chat's `task` calls (subagents, `stepwise/subagent`): a line under the call naming the
-- child with its state, rounds and tokens, redrawn as it goes (`  ↳ sa-1 · running · 2 rounds · 1830 tokens ·
-- bash`), and the child's calls indented under that line. Children run at the same time, so a child's call goes
-- under its own line, not at the end of the conversation. After a reload the same from stepwise.conversation:
-- a child's entries follow its `task` call, whose result ends with the line saying how the child ended.
-- `apply` is chat_blocks' with the events a child adds to (chat.lua draws with it).
local M = {}

local api = vim.api
local blocks = require('stepwise.chat_blocks')

local ns = blocks.ns
local INDENT = '    '

---@class stepwise.ChatChild
---@field id string `sa-<n>`
---@field mark integer extmark of its line
---@field n integer lines of its calls under its line
---@field state string? running | done | failed | cancelled
---@field rounds integer?
---@field tokens integer?
---@field last_tool string? the tool of its latest call
---@field asking string? the call id of its open question

local function child_line(c)
  local parts = { '  ↳ ' .. c.id }
  if c.state then
    parts[#parts + 1] = c.state
  end
  if c.rounds then
    parts[#parts + 1] = c.rounds .. (c.rounds == 1 and ' round' or ' rounds')
  end
  if c.tokens then
    parts[#parts + 1] = c.tokens .. ' tokens'
  end
  -- while it runs: what it waits for (a question of it to you), else what it did last
  if c.state == 'running' and (c.asking or c.last_tool) then
    parts[#parts + 1] = c.asking and 'asks you' or c.last_tool
  end
  return table.concat(parts, ' · ')
end

local function row_of(ch, mark)
  local pos = mark and api.nvim_buf_get_extmark_by_id(ch.buf, ns, mark, {}) or {}
  return pos[1]
end

local function redraw(ch, c)
  local row = row_of(ch, c.mark)
  if not row then
    return
  end
  -- the mark made again: one on a replaced line could end up below it
  api.nvim_buf_del_extmark(ch.buf, ns, c.mark)
  api.nvim_buf_set_lines(ch.buf, row, row + 1, false, { child_line(c) })
  c.mark = api.nvim_buf_set_extmark(ch.buf, ns, row, 0, {})
end

--- The child `id` of the chat, its line made when new: under row `after` (its `task` call's line), else at
--- the end of the conversation (where its `task` call was drawn last).
---@return stepwise.ChatChild
local function child(ch, id, after)
  ch.subs = ch.subs or {}
  local c = ch.subs[id]
  if c and row_of(ch, c.mark) then
    return c
  end
  c = { id = id, n = 0 }
  local row
  if after then
    row = after + 1
    api.nvim_buf_set_lines(ch.buf, row, row, false, { child_line(c) })
  else
    blocks.ensure_agent(ch)
    row = blocks.block(ch, { child_line(c) }, 'tool')
  end
  c.mark = api.nvim_buf_set_extmark(ch.buf, ns, row, 0, {})
  ch.subs[id] = c
  return c
end

--- A child's call under its line: a line when it starts, turned into its outcome when it finishes.
---@param d table stepwise/toolCall params with `subagent`, or a child's conversation entry's `tool` (finished)
local function add_call(ch, d, phase)
  local c = child(ch, d.subagent, nil)
  local key = c.id .. ':' .. tostring(d.id) -- ids are the conversation's: keep the children's apart
  local lines = { INDENT .. blocks.tool_line(d, phase) }
  if phase == 'finished' then
    for _, l in ipairs(blocks.error_lines(d)) do
      lines[#lines + 1] = INDENT .. l
    end
  end
  local mark = d.id and ch.tools[key]
  if phase == 'finished' and mark then
    ch.tools[key] = nil
    local row = row_of(ch, mark)
    api.nvim_buf_del_extmark(ch.buf, ns, mark)
    if row then
      api.nvim_buf_set_lines(ch.buf, row, row + 1, false, lines)
      c.n = c.n + #lines - 1
      return
    end
  end
  local at = row_of(ch, c.mark) + c.n + 1
  api.nvim_buf_set_lines(ch.buf, at, at, false, lines)
  c.n = c.n + #lines
  if phase == 'started' and d.id then
    ch.tools[key] = api.nvim_buf_set_extmark(ch.buf, ns, at, 0, {})
  end
end

local function num(v)
  return type(v) == 'number' and v or nil
end

local apply = setmetatable({}, { __index = blocks.apply })

--- stepwise/subagent: the child's line, made under its `task` call, redrawn.
function apply.subagent(ch, d)
  if type(d.id) ~= 'string' then
    return
  end
  local task = d.toolCallId and ch.tools[tostring(d.toolCallId)]
  local c = child(ch, d.id, task and row_of(ch, task) or nil)
  c.state = type(d.state) == 'string' and d.state or c.state
  c.rounds, c.tokens = num(d.rounds) or c.rounds, num(d.tokens) or c.tokens
  c.last_tool = type(d.lastTool) == 'string' and d.lastTool or nil
  if c.state ~= 'running' then
    c.asking = nil
  end
  redraw(ch, c)
end

function apply.tool(ch, d)
  if type(d.subagent) == 'string' then
    return add_call(ch, d, d.phase)
  end
  blocks.apply.tool(ch, d)
end

--- A child's question: drawn as any (ask.lua's lines name the child); its line says it asks meanwhile.
function apply.ask(ch, d)
  local c = type(d.subagent) == 'string' and ch.subs and ch.subs[d.subagent]
  if c then
    c.asking = d.callId or true
    redraw(ch, c)
  end
  blocks.apply.ask(ch, d)
end

function apply.asked(ch, d)
  for _, c in pairs(ch.subs or {}) do
    if c.asking and c.asking == d.callId then
      c.asking = nil
      redraw(ch, c)
    end
  end
  blocks.apply.asked(ch, d)
end

--- What each live event shows in a chat (chat_blocks' own, with the children's).
M.apply = apply

--- The child a `task` result names in its last line `(subagent sa-<n>: <r> rounds, <t> tokens, <how it ended>)`.
---@param output string?
---@return {id: string, state: string, rounds: integer, tokens: integer}?
function M.ended(output)
  local last = (type(output) == 'string' and output or ''):match('([^\n]*)$')
  local id, rounds, tokens, how = last:match('^%(subagent (sa%-%d+): (%d+) rounds, (%d+) tokens, (.*)%)$')
  if not id then
    return nil
  end
  local state = 'done'
  if how:find('^cancelled') or how:find('^it was cancelled') then
    state = 'cancelled'
  elseif how:find('^it failed') then
    state = 'failed'
  end
  return { id = id, state = state, rounds = tonumber(rounds), tokens = tonumber(tokens) }
end

--- A saved `task` call (just drawn): its child's line, when its result says who the child was (a result cut
--- short, or one not in yet, does not: the child's entries that follow make its line with its id alone).
---@param t table the entry's `tool`
function M.restored_task(ch, t)
  local info = t.name == 'task' and M.ended(t.output)
  if not info then
    return
  end
  local c = child(ch, info.id, nil)
  c.state, c.rounds, c.tokens = info.state, info.rounds, info.tokens
  redraw(ch, c)
end

--- A child's saved entry: its calls under its line (its text is its result's, which the `task` call gave).
---@param e table a stepwise.conversation entry with `subagent`
function M.restored_entry(ch, e)
  if e.kind == 'tool' and type(e.tool) == 'table' then
    add_call(ch, vim.tbl_extend('force', e.tool, { subagent = e.subagent }), 'finished')
  end
end

return M
