-- The transcript buffer (`:Stepwise log`): assistant text, tool calls, reminders and run endings.
local M = {}

local api = vim.api
local state = require('stepwise.state')
local client = require('stepwise.client')
local ns = api.nvim_create_namespace('stepwise.log')
M.name = 'stepwise://log'

local buf ---@type integer?
local streaming = false -- the last line is assistant text still being streamed
local last_ws ---@type string? the session (state.key) of the last entry

local function ensure_buf()
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, M.name)
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = 'stepwiselog'
  streaming = false
  return buf
end

function M.bufnr()
  return ensure_buf()
end

--- Windows showing the log whose cursor is on the last line (they follow new output).
local function following(b)
  local wins = {}
  local last = api.nvim_buf_line_count(b)
  for _, w in ipairs(vim.fn.win_findbuf(b)) do
    if api.nvim_win_get_cursor(w)[1] >= last then
      wins[#wins + 1] = w
    end
  end
  return wins
end

local function scroll(b, wins)
  local last = api.nvim_buf_line_count(b)
  for _, w in ipairs(wins) do
    if api.nvim_win_is_valid(w) then
      api.nvim_win_set_cursor(w, { last, 0 })
    end
  end
end

local function is_empty(b)
  return api.nvim_buf_line_count(b) == 1 and api.nvim_buf_get_lines(b, 0, 1, false)[1] == ''
end

---@param lines string[]
---@param group string?
local function append(lines, group)
  local b = ensure_buf()
  local wins = following(b)
  vim.bo[b].modifiable = true
  local start
  if is_empty(b) then
    start = 0
    api.nvim_buf_set_lines(b, 0, -1, false, lines)
  else
    start = api.nvim_buf_line_count(b)
    api.nvim_buf_set_lines(b, -1, -1, false, lines)
  end
  vim.bo[b].modifiable = false
  if group then
    for i, l in ipairs(lines) do
      if l ~= '' then
        api.nvim_buf_set_extmark(b, ns, start + i - 1, 0, { end_col = #l, hl_group = group })
      end
    end
  end
  scroll(b, wins)
  streaming = false
end

--- Names the folder (and the session, when not the folder's own) when it changes and more than one folder or
--- session is known.
---@param key string? the session's key (state.key; a folder's uri for its own)
local function prefix_ws(key)
  local f = state.get(key)
  if key and key ~= last_ws and (client.folder_count() > 1 or (f and #state.sessions(f.uri) > 1)) then
    last_ws = key
    local name = f and f.path or key
    if f and f.session ~= state.MAIN then
      name = name .. ' · ' .. (f.title or f.session)
    end
    append({ '', '# ' .. name }, 'StepwiseLogHeader')
  end
  last_ws = key or last_ws
end

local function split(text)
  return vim.split(tostring(text or ''), '\n', { plain = true })
end

--- A chunk of the model's text; consecutive chunks join up.
function M.assistant_text(key, text)
  if not text or text == '' then
    return
  end
  prefix_ws(key)
  local b = ensure_buf()
  local parts = split(text)
  local wins = following(b)
  vim.bo[b].modifiable = true
  if streaming and not is_empty(b) then
    local n = api.nvim_buf_line_count(b)
    local lastline = api.nvim_buf_get_lines(b, n - 1, n, false)[1] or ''
    parts[1] = lastline .. parts[1]
    api.nvim_buf_set_lines(b, n - 1, n, false, parts)
  elseif is_empty(b) then
    api.nvim_buf_set_lines(b, 0, -1, false, parts)
  else
    api.nvim_buf_set_lines(b, -1, -1, false, parts)
  end
  vim.bo[b].modifiable = false
  scroll(b, wins)
  streaming = true
end

function M.run_started(key, run_id, prompt)
  prefix_ws(key)
  local head = '## run ' .. tostring(run_id or '?')
  local lines = { '', head }
  if prompt and prompt ~= '' then
    for _, l in ipairs(split(prompt)) do
      lines[#lines + 1] = '> ' .. l
    end
  end
  append(lines, 'StepwiseLogHeader')
end

function M.tool_call(p)
  prefix_ws(type(p.workspace) == 'string' and state.key(p.workspace, p.session) or nil)
  local summary = tostring(p.summary or ''):gsub('\n', ' ')
  -- a child's call (`task`): named for the child
  local who = type(p.subagent) == 'string' and ('  ' .. p.subagent .. ' ') or ''
  if p.phase == 'started' then
    append({ who .. '→ ' .. tostring(p.name) .. ': ' .. summary }, 'StepwiseLogTool')
  else
    local ok = not p.isError
    local lines = { who .. (ok and '✓ ' or '✗ ') .. tostring(p.name) .. ': ' .. summary }
    if p.output and p.output ~= vim.NIL and p.output ~= '' then
      local out = split(p.output)
      for i = 1, math.min(#out, 12) do
        lines[#lines + 1] = '    ' .. out[i]
      end
      if #out > 12 then
        lines[#lines + 1] = '    …'
      end
    end
    append(lines, ok and 'StepwiseLogTool' or 'StepwiseLogError')
  end
end

function M.reminder(key, text)
  prefix_ws(key)
  append({ '⚑ ' .. tostring(text or ''):gsub('\n', ' ') }, 'StepwiseLogReminder')
end

function M.line(key, text, group)
  prefix_ws(key)
  append(split(text), group)
end

function M.run_ended(key, reason, message)
  prefix_ws(key)
  local l = '— run ended: ' .. tostring(reason or '?')
  if message and message ~= vim.NIL and message ~= '' then
    l = l .. ': ' .. tostring(message):gsub('\n', ' ')
  end
  append({ l }, reason == 'error' and 'StepwiseLogError' or 'StepwiseLogHeader')
end

--- Show the transcript in a split (or go to it when it is shown).
function M.open()
  local b = ensure_buf()
  local wins = vim.fn.win_findbuf(b)
  if #wins > 0 then
    api.nvim_set_current_win(wins[1])
    return
  end
  vim.cmd('botright 12split')
  api.nvim_win_set_buf(0, b)
  vim.wo.wrap = true
  vim.wo.number = false
  api.nvim_win_set_cursor(0, { api.nvim_buf_line_count(b), 0 })
end

function M.lines()
  return api.nvim_buf_get_lines(ensure_buf(), 0, -1, false)
end

return M
