-- The conversation as a buffer (`:Stepwise chat`, `stepwise://chat`, filetype markdown): the plan on top,
-- the conversation below it as it streams, and the prompt after the last line `## You` (`:w` sends it; during
-- a run it steers). History comes from `stepwise.conversation` when the buffer is made (after a restart too).
-- Streaming only appends or rewrites the last lines (never the whole buffer).
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')
local events = require('stepwise.events')
local execute = require('stepwise.execute').execute
local plan = require('stepwise.plan')

M.name = 'stepwise://chat'
M.prompt_header = '## You'
M.agent_header = '## stepwise'

local ns = api.nvim_create_namespace('stepwise.chat')

---@class stepwise.Chat
---@field buf integer
---@field uri string
---@field plan_n integer lines of the plan block at the top
---@field speaker 'user'|'agent'|nil who the last conversation block is from
---@field last 'text'|'tool'|'note'|'user'|nil what the last conversation line is
---@field tools table<string, integer> tool call id -> extmark of its line
---@field queue table[]? live events held while the history loads

---@type table<string, stepwise.Chat> by folder uri
local chats = {}
local unsubscribe ---@type fun()[]?

local function split(text)
  return vim.split(tostring(text or ''), '\n', { plain = true })
end

local function one_line(text)
  return (tostring(text or ''):gsub('%s*\n%s*', ' '))
end

--- The row (0-based) of the prompt header: the last line `## You` (made again at the end when deleted).
---@param ch stepwise.Chat
---@return integer
local function header_row(ch)
  local n = api.nvim_buf_line_count(ch.buf)
  for row = n - 1, ch.plan_n, -1 do
    if api.nvim_buf_get_lines(ch.buf, row, row + 1, false)[1] == M.prompt_header then
      return row
    end
  end
  api.nvim_buf_set_lines(ch.buf, n, n, false, { '', M.prompt_header, '' })
  return n + 1
end

--- Change the buffer without marking it modified by that (only the user's typing does), and out of the undo
--- history: `u` undoes your typing of the prompt, never a piece of the conversation.
local function edit(ch, fn)
  local buf = ch.buf
  local mod = vim.bo[buf].modified
  local ul = vim.bo[buf].undolevels
  vim.bo[buf].undolevels = -1
  local ok, err = pcall(fn)
  vim.bo[buf].undolevels = ul
  vim.bo[buf].modified = mod
  if not ok then
    error(err, 0)
  end
end

--- Insert lines at the end of the conversation (before the blank line above the prompt header).
---@param ch stepwise.Chat
---@param lines string[]
---@return integer row of the first inserted line
local function insert(ch, lines)
  local at = math.max(header_row(ch) - 1, ch.plan_n)
  api.nvim_buf_set_lines(ch.buf, at, at, false, lines)
  return at
end

--- A block of lines, after a blank line (none between consecutive tool lines).
local function block(ch, lines, kind)
  local out = {}
  if not (kind == 'tool' and ch.last == 'tool') then
    out[1] = ''
  end
  vim.list_extend(out, lines)
  local row = insert(ch, out)
  ch.last = kind
  return row + #out - #lines
end

local function ensure_agent(ch)
  if ch.speaker ~= 'agent' then
    block(ch, { M.agent_header }, 'note')
    ch.speaker = 'agent'
  end
end

--- The plan block on top: `# Plan`, the plan in its render form, a rule.
local function plan_lines(folder)
  local lines = { '# Plan', '' }
  vim.list_extend(lines, (plan.render(folder and folder.plan)))
  vim.list_extend(lines, { '', '---' })
  return lines
end

---@param ch stepwise.Chat
function M._set_plan(ch)
  local lines = plan_lines(state.get(ch.uri))
  edit(ch, function()
    api.nvim_buf_set_lines(ch.buf, 0, ch.plan_n, false, lines)
  end)
  ch.plan_n = #lines
end

-- ---------------------------------------------------------------------------
-- what is shown (the same for live events and the restored history)

---@param ch stepwise.Chat
---@param text string
local function add_user(ch, text)
  local lines = { M.prompt_header, '' }
  vim.list_extend(lines, split(text))
  block(ch, lines, 'user')
  ch.speaker = 'user'
end

--- A chunk of the model's text; chunks join up on the last line.
local function add_text(ch, text)
  if not text or text == '' then
    return
  end
  local parts = split(text)
  if ch.last == 'text' and ch.speaker == 'agent' then
    local row = header_row(ch) - 2
    local last = api.nvim_buf_get_lines(ch.buf, row, row + 1, false)[1] or ''
    parts[1] = last .. parts[1]
    api.nvim_buf_set_lines(ch.buf, row, row + 1, false, parts)
    return
  end
  ensure_agent(ch)
  block(ch, parts, 'text')
end

local function tool_line(t, phase)
  local mark = phase == 'started' and '⚙' or (t.isError and '✗' or '✓')
  local summary = one_line(t.summary)
  return string.format('- %s `%s`%s', mark, tostring(t.name or '?'), summary ~= '' and (' ' .. summary) or '')
end

--- Output lines shown under a failed call (a successful call shows its summary only; `:Stepwise log` has more).
local function error_lines(t)
  if not t.isError or type(t.output) ~= 'string' or t.output == '' then
    return {}
  end
  local out = {}
  for i, l in ipairs(split(t.output)) do
    if i > 6 then
      out[#out + 1] = '      …'
      break
    end
    out[#out + 1] = '      ' .. l
  end
  return out
end

--- A tool call: a line when it starts, turned into its outcome when it finishes.
---@param t table stepwise/toolCall params, or a conversation entry's `tool` (finished)
local function add_tool(ch, t, phase)
  ensure_agent(ch)
  local id = t.id and tostring(t.id)
  local mark = id and ch.tools[id]
  if phase == 'finished' and mark then
    ch.tools[id] = nil
    local pos = api.nvim_buf_get_extmark_by_id(ch.buf, ns, mark, {})
    api.nvim_buf_del_extmark(ch.buf, ns, mark)
    if pos and pos[1] then
      local row = pos[1]
      local lines = { tool_line(t, phase) }
      vim.list_extend(lines, error_lines(t))
      api.nvim_buf_set_lines(ch.buf, row, row + 1, false, lines)
      return
    end
  end
  local lines = { tool_line(t, phase) }
  if phase == 'finished' then
    vim.list_extend(lines, error_lines(t))
  end
  local row = block(ch, lines, 'tool')
  if phase == 'started' and id then
    ch.tools[id] = api.nvim_buf_set_extmark(ch.buf, ns, row, 0, {})
  end
end

--- A small note (reminder, plan edit, approval, run end), as a quote.
local function add_note(ch, text)
  local lines = {}
  for _, l in ipairs(split(text)) do
    lines[#lines + 1] = '> ' .. l
  end
  block(ch, lines, 'note')
end

-- ---------------------------------------------------------------------------
-- live events

---@param uri string?
---@return stepwise.Chat[]
local function chats_for(uri)
  local out = {}
  for u, ch in pairs(chats) do
    if api.nvim_buf_is_valid(ch.buf) and (uri == nil or u == uri) then
      out[#out + 1] = ch
    end
  end
  return out
end

local apply = {}

function apply.user(ch, d)
  add_user(ch, d.text)
end

function apply.text(ch, d)
  add_text(ch, d.text)
end

--- Planning calls show as the plan on top (only a failed one as a line).
local function is_planning(t)
  return (t.name == 'todo' or t.name == 'update_todo') and not t.isError
end

function apply.tool(ch, d)
  if is_planning(d) then
    return
  end
  add_tool(ch, d, d.phase)
end

function apply.reminder(ch, d)
  add_note(ch, '⚑ ' .. one_line(d.text))
end

function apply.status(ch, d)
  if type(d.prompt) == 'string' and d.prompt ~= '' then
    -- a run started elsewhere (`:Stepwise run`)
    add_user(ch, d.prompt)
  end
  if d.state == 'idle' then
    if d.reason and d.reason ~= 'end_turn' then
      local msg = d.message and (': ' .. one_line(d.message)) or ''
      add_note(ch, '— run ended: ' .. tostring(d.reason) .. msg)
    end
    ch.speaker = nil
  end
end

-- What a change of the plan not made by the model is called (`change` of stepwise/plan); a reset says
-- nothing (the conversation is shown anew then), nor does the model's change (its tool calls do).
local PLAN_CHANGE = {
  edit = '✎ you edited the plan',
  approved = '✓ you approved the plan',
  rewind = '↶ the plan went back with the rewind',
}

function apply.plan(ch, d)
  M._set_plan(ch)
  local folder = state.get(ch.uri)
  if d.by ~= 'user' or not folder or not folder.plan then
    return
  end
  -- a server without `change` said only who: its user changes were edits (or a reset, emptying the plan)
  local change = d.change or (#(folder.plan.items or {}) > 0 and 'edit' or 'reset')
  if PLAN_CHANGE[change] then
    add_note(ch, PLAN_CHANGE[change])
  end
end

function apply.approval(ch, d)
  if d.choice then
    add_note(ch, '→ ' .. one_line(d.choice))
  else
    add_note(ch, '⚠ ' .. one_line(d.message))
  end
end

local function dispatch(kind, d)
  local uri = d and d.workspace
  for _, ch in ipairs(chats_for(kind == 'approval' and nil or uri)) do
    if ch.queue then
      ch.queue[#ch.queue + 1] = { kind, d }
    else
      edit(ch, function()
        apply[kind](ch, d)
      end)
      util.emit('StepwiseChat', { workspace = ch.uri, kind = kind })
    end
  end
end

local function subscribe()
  if unsubscribe then
    return
  end
  unsubscribe = {}
  for _, kind in ipairs({ 'text', 'tool', 'reminder', 'status', 'plan', 'approval' }) do
    unsubscribe[#unsubscribe + 1] = events.on(kind, function(d)
      dispatch(kind, d)
    end)
  end
  -- a reset or a rewind changed the conversation: show it again as the server has it
  unsubscribe[#unsubscribe + 1] = events.on('reload', function(d)
    for _, ch in ipairs(chats_for(d and d.workspace)) do
      local folder = state.get(ch.uri)
      if folder and not ch.queue then
        ch.queue = {}
        M._load(ch, folder)
      end
    end
  end)
end

-- ---------------------------------------------------------------------------
-- history

--- Show the saved conversation (entries of stepwise.conversation), then what streamed meanwhile.
---@param ch stepwise.Chat
---@param entries table[]
function M._restore(ch, entries)
  edit(ch, function()
    local row = header_row(ch)
    api.nvim_buf_set_lines(ch.buf, ch.plan_n, row - 1, false, {})
    ch.speaker, ch.last, ch.tools = nil, nil, {}
    for _, e in ipairs(entries) do
      local kind = e.kind
      if kind == 'user' or kind == 'steer' then
        add_user(ch, e.text)
      elseif kind == 'assistant' then
        ch.last = nil -- a saved message is whole: the next one does not join it
        add_text(ch, e.text)
      elseif kind == 'tool' and type(e.tool) == 'table' and not is_planning(e.tool) then
        add_tool(ch, e.tool, 'finished')
      elseif kind == 'reminder' then
        add_note(ch, '⚑ ' .. one_line(e.text))
      elseif kind == 'planEdit' then
        add_note(ch, '✎ you edited the plan')
      end
    end
    ch.speaker = nil
  end)
  local queue = ch.queue or {}
  ch.queue = nil
  for _, q in ipairs(queue) do
    edit(ch, function()
      apply[q[1]](ch, q[2])
    end)
  end
  util.emit('StepwiseChat', { workspace = ch.uri, kind = 'restored' })
end

function M._load(ch, folder)
  execute(folder, 'stepwise.conversation', nil, function(err, result)
    if not api.nvim_buf_is_valid(ch.buf) then
      return
    end
    local entries = (not err and type(result) == 'table' and type(result.entries) == 'table') and result.entries or {}
    M._restore(ch, entries)
  end, true)
end

-- ---------------------------------------------------------------------------
-- sending

--- The prompt: the text after the last line `## You`, trimmed.
---@param buf integer
---@return string text, integer header row
function M.prompt(buf)
  local ch
  for _, c in pairs(chats) do
    if c.buf == buf then
      ch = c
    end
  end
  local row = ch and header_row(ch) or 0
  local lines = api.nvim_buf_get_lines(buf, row + 1, -1, false)
  return vim.trim(table.concat(lines, '\n')), row
end

--- `:w`: send the prompt (a steer while a run goes on); the text moves into the conversation.
---@param ch stepwise.Chat
function M.send(ch)
  local text, row = M.prompt(ch.buf)
  if text == '' then
    util.notify('nothing to send: write your message below the last "' .. M.prompt_header .. '" line', vim.log.levels.WARN)
    return
  end
  local folder = state.get(ch.uri)
  if not folder then
    return
  end
  local draft = api.nvim_buf_get_lines(ch.buf, row + 1, -1, false)
  local function put_back()
    -- the text is not lost: it goes back below the header
    if api.nvim_buf_is_valid(ch.buf) then
      local r = header_row(ch)
      api.nvim_buf_set_lines(ch.buf, r + 1, -1, false, draft)
    end
  end
  edit(ch, function()
    api.nvim_buf_set_lines(ch.buf, row + 1, -1, false, { '' })
    if ch.queue then
      -- the history is still loading: shown after it
      ch.queue[#ch.queue + 1] = { 'user', { text = text } }
    else
      add_user(ch, text)
    end
  end)
  vim.bo[ch.buf].modified = false
  for _, w in ipairs(vim.fn.win_findbuf(ch.buf)) do
    api.nvim_win_set_cursor(w, { api.nvim_buf_line_count(ch.buf), 0 })
  end
  local function sent(kind, err)
    if err then
      put_back()
    end
    util.emit('StepwiseChatSent', { workspace = ch.uri, kind = kind, text = text, error = err and err.message })
  end
  local function steer()
    execute(folder, 'stepwise.steer', { text = text }, function(err)
      sent('steer', err)
    end)
  end
  if folder.state ~= 'idle' then
    return steer()
  end
  folder.prompt = text
  execute(folder, 'stepwise.run', { prompt = text }, function(err, result)
    if err then
      -- a run started meanwhile (from elsewhere): the text steers it
      if tostring(err.message or ''):find('already in progress', 1, true) then
        return steer()
      end
      util.notify('stepwise.run: ' .. tostring(err.message or err), vim.log.levels.WARN)
    elseif type(result) == 'table' and result.runId then
      folder.run_id = result.runId
    end
    sent('run', err)
  end, true)
end

-- ---------------------------------------------------------------------------
-- the buffer

local function make_buf(folder)
  local buf = api.nvim_create_buf(true, false)
  local name = M.name
  if next(chats) ~= nil then
    name = M.name .. '/' .. vim.fs.basename(folder.path)
  end
  if not pcall(api.nvim_buf_set_name, buf, name) then
    -- taken (another folder with that name): the folder's path tells them apart
    pcall(api.nvim_buf_set_name, buf, M.name .. folder.path)
  end
  vim.bo[buf].buftype = 'acwrite'
  vim.bo[buf].swapfile = false
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].filetype = 'markdown'
  local ch = { buf = buf, uri = folder.uri, plan_n = 0, tools = {}, queue = {} }
  local lines = plan_lines(folder)
  ch.plan_n = #lines
  vim.list_extend(lines, { '', M.prompt_header, '' })
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modified = false
  chats[folder.uri] = ch
  local group = api.nvim_create_augroup('stepwise.chat.' .. buf, { clear = true })
  api.nvim_create_autocmd('BufWriteCmd', {
    group = group,
    buffer = buf,
    callback = function()
      M.send(ch)
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = buf,
    callback = function()
      if chats[ch.uri] == ch then
        chats[ch.uri] = nil
      end
    end,
  })
  local function cancel()
    execute(folder, 'stepwise.cancel')
  end
  vim.keymap.set({ 'n', 'i' }, '<C-c>', cancel, { buffer = buf, desc = 'stepwise: cancel the run' })
  subscribe()
  M._load(ch, folder)
  return ch
end

--- The chat of a folder (made, and its history loaded, on first use).
---@param folder stepwise.Folder
---@return stepwise.Chat
function M.get(folder)
  local ch = chats[folder.uri]
  if ch and api.nvim_buf_is_valid(ch.buf) then
    return ch
  end
  return make_buf(folder)
end

--- `:Stepwise chat`: show the folder's chat in a split on the right (or go to it), cursor on the prompt.
---@param folder stepwise.Folder
---@return integer buf
function M.open(folder)
  local ch = M.get(folder)
  local wins = vim.fn.win_findbuf(ch.buf)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
  else
    vim.cmd(vim.o.columns >= 120 and 'botright vsplit' or 'botright split')
    api.nvim_win_set_buf(0, ch.buf)
    vim.wo.wrap = true
    vim.wo.linebreak = true
  end
  api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(ch.buf), 0 })
  return ch.buf
end

--- The chat of a buffer, if it is one.
---@param buf integer
---@return stepwise.Chat?
function M.of_buf(buf)
  for _, ch in pairs(chats) do
    if ch.buf == buf then
      return ch
    end
  end
end

return M
