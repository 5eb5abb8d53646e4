-- What a chat buffer shows, and how each kind of entry is drawn into it (the same for live events and the
-- restored history): the plan block on top, the user's and the model's blocks, tool calls turned into their
-- outcome, notes. Only appends or rewrites the last lines; never marks the buffer modified (chat.lua's job is
-- when and for which folder).
local M = {}

local api = vim.api
local state = require('stepwise.state')
local plan = require('stepwise.plan')
local ask = require('stepwise.ask')

M.prompt_header = '## You'
M.agent_header = '## stepwise'

local ns = api.nvim_create_namespace('stepwise.chat')

---@class stepwise.Chat
---@field buf integer
---@field uri string the folder's
---@field key string the session's (state.key)
---@field session string the session's id
---@field plan_n integer lines of the plan block at the top
---@field speaker 'user'|'agent'|nil who the last conversation block is from
---@field last 'text'|'tool'|'note'|'user'|nil what the last conversation line is
---@field tools table<string, integer> tool call id -> extmark of its line
---@field queue table[]? live events held while the history loads
---@field subs table<string, stepwise.ChatChild>? the children (`task`) shown, by id (chat_subagents.lua)

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

--- The plan block on top: `# Plan`, the plan in its render form, a rule; a session other than the folder's
--- own is named above it (`# Session: <title>`, then where its worktree is).
local function plan_lines(folder)
  local lines = { '# Plan', '' }
  if folder and folder.session and folder.session ~= state.MAIN then
    lines = { '# Session: ' .. (folder.title or folder.session), '' }
    if folder.worktree then
      local what = folder.branch and ('worktree on `' .. folder.branch .. '`') or 'a copy of the folder'
      vim.list_extend(lines, { what .. ': ' .. folder.worktree, '' })
    end
    vim.list_extend(lines, { '# Plan', '' })
  end
  vim.list_extend(lines, (plan.render(folder and folder.plan)))
  vim.list_extend(lines, { '', '---' })
  return lines
end

---@param ch stepwise.Chat
function M._set_plan(ch)
  local lines = plan_lines(state.get(ch.key))
  edit(ch, function()
    api.nvim_buf_set_lines(ch.buf, 0, ch.plan_n, false, lines)
  end)
  ch.plan_n = #lines
end

-- ---------------------------------------------------------------------------
-- what is shown (the same for live events and the restored history)

---@param ch stepwise.Chat
---@param text string?
---@param images string[]? what each image of the prompt is called (its file, or its media type)
local function add_user(ch, text, images)
  local lines = { M.prompt_header, '' }
  if text and text ~= '' then
    vim.list_extend(lines, split(text))
  end
  for _, name in ipairs(images or {}) do
    lines[#lines + 1] = '[image: ' .. name .. ']'
  end
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

local apply = {}

function apply.user(ch, d)
  add_user(ch, d.text, d.names)
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
  local folder = state.get(ch.key)
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

--- A question (stepwise/ask) under its call, with how to answer it.
function apply.ask(ch, d)
  local lines = ask.lines(d)
  lines[1] = '⚠ ' .. lines[1]
  lines[#lines + 1] = ':Stepwise allow | :Stepwise allow session | :Stepwise deny   (here: <LocalLeader>a / s / d)'
  add_note(ch, table.concat(lines, '\n'))
end

function apply.asked(ch, d)
  add_note(ch, '→ ' .. ask.title(d.choice))
end

--- What the model was told of errors after a round, listed under the round's calls (`stepwise/diagnostics`'
--- lines, or those of a saved `<diagnostics>` block).
---@param texts string[]
local function add_diagnostics(ch, texts)
  if #texts == 0 then
    return
  end
  ensure_agent(ch)
  local lines = {}
  for _, t in ipairs(texts) do
    lines[#lines + 1] = '      ⚠ ' .. one_line(t)
  end
  block(ch, lines, 'tool')
end

--- The lines of a saved `<diagnostics>` block.
local function diagnostic_lines(text)
  local out = {}
  for _, l in ipairs(split(type(text) == 'string' and text or '')) do
    l = vim.trim(l)
    if l ~= '' and l ~= '<diagnostics>' and l ~= '</diagnostics>' then
      out[#out + 1] = l
    end
  end
  return out
end

function apply.diagnostics(ch, d)
  local texts = {}
  for _, l in ipairs(type(d.lines) == 'table' and d.lines or {}) do
    texts[#texts + 1] = tostring(l.text)
  end
  add_diagnostics(ch, texts)
end

--- The notes of a saved `<background-results>` block: each task's end in a line (`⏹ bg-1 exited 3`), with the
--- last lines of its output when it failed, as jobs.lua says an end live (the block does not name the command).
local function background_notes(text)
  local tasks, cur = {}, nil
  for _, l in ipairs(split(type(text) == 'string' and text or '')) do
    local t = vim.trim(l)
    local id, st = t:match('^(bg%-%d+): (.+)$')
    if id then
      cur = { id = id, state = st, out = {} }
      tasks[#tasks + 1] = cur
    elseif cur and t ~= '' and t ~= '</background-results>' then
      cur.out[#cur.out + 1] = l
    end
  end
  local notes = {}
  for _, task in ipairs(tasks) do
    local lines = { string.format('⏹ %s %s', task.id, task.state) }
    if task.state:match('^exited %d') and task.state ~= 'exited 0' then
      for i = math.max(1, #task.out - 2), #task.out do
        lines[#lines + 1] = '  ' .. task.out[i]
      end
    end
    notes[#notes + 1] = table.concat(lines, '\n')
  end
  return notes
end

--- A background task ended (also after the run): its line (jobs.lua's `note`).
function apply.job_ended(ch, d)
  add_note(ch, d.note)
end

--- What each live event (`events` kind) shows in a chat.
M.apply = apply

M.split, M.one_line, M.header_row, M.edit, M.plan_lines = split, one_line, header_row, edit, plan_lines
M.add_user, M.add_text, M.add_tool, M.add_note, M.is_planning = add_user, add_text, add_tool, add_note, is_planning
M.add_diagnostics, M.diagnostic_lines, M.background_notes = add_diagnostics, diagnostic_lines, background_notes
M.ns, M.block, M.ensure_agent, M.tool_line, M.error_lines = ns, block, ensure_agent, tool_line, error_lines

return M
