-- The plan: rendering, and the floating window that follows it live (`:Stepwise plan`).
local M = {}

local api = vim.api
local config = require('stepwise.config')
local state = require('stepwise.state')
local mcp = require('stepwise.mcp')
local ns = api.nvim_create_namespace('stepwise.plan')

local marks = {
  completed = 'x',
  in_progress = '>',
  pending = ' ',
  failed = '!',
}
local hl = {
  completed = 'StepwisePlanDone',
  in_progress = 'StepwisePlanActive',
  pending = 'StepwisePlanPending',
  failed = 'StepwisePlanFailed',
}

--- The in-progress item of a plan, if any.
---@param plan table?
---@return table?
function M.active_item(plan)
  for _, item in ipairs(plan and plan.items or {}) do
    if item.status == 'in_progress' then
      return item
    end
  end
end

--- Lines of a plan, as the agent's todo tool renders it.
---@param plan table?
---@return string[] lines, string[] highlight group per line
function M.render(plan)
  local items = plan and plan.items or {}
  if #items == 0 then
    return { 'No todos.' }, { 'StepwisePlanPending' }
  end
  local lines, groups = {}, {}
  local done = 0
  for _, item in ipairs(items) do
    local status = item.status or 'pending'
    if status == 'completed' then
      done = done + 1
    end
    local text = tostring(item.text or ''):gsub('\n', ' ')
    lines[#lines + 1] = string.format('[%s] #%s: %s', marks[status] or '?', tostring(item.id), text)
    groups[#groups + 1] = hl[status] or 'StepwisePlanPending'
  end
  local completed = tonumber(plan.completed) or done
  local total = tonumber(plan.total) or #items
  lines[#lines + 1] = ''
  groups[#groups + 1] = false
  lines[#lines + 1] = string.format('(%d/%d completed)', completed, total)
  groups[#groups + 1] = 'StepwisePlanSummary'
  return lines, groups
end

local function short(n)
  n = tonumber(n) or 0
  if n >= 1000000 then
    return string.format('%.1fM', n / 1000000)
  elseif n >= 10000 then
    return string.format('%dk', math.floor(n / 1000 + 0.5))
  elseif n >= 1000 then
    return string.format('%.1fk', n / 1000)
  end
  return tostring(math.floor(n))
end

--- Context use of a folder's latest prompt: `ctx 12% · cache 83%`, and the latest compaction
--- (`compacted 150k→20k`); nil when the server reported neither.
---@param folder table?
---@return string?
function M.context_text(folder)
  local parts = {}
  local u = folder and folder.usage
  local window, used = u and tonumber(u.contextWindow), u and tonumber(u.contextTokens)
  if window and window > 0 and used then
    parts[#parts + 1] = string.format('ctx %d%%', math.floor(100 * used / window + 0.5))
    local input, read = tonumber(u.inputTokens), tonumber(u.cacheReadTokens)
    if input and input > 0 and read and read > 0 then
      parts[#parts + 1] = string.format('cache %d%%', math.floor(100 * read / input + 0.5))
    end
  end
  local c = folder and folder.compacted
  if c then
    parts[#parts + 1] = string.format('compacted %s→%s', short(c.tokensBefore), short(c.tokensAfter))
  end
  if #parts == 0 then
    return nil
  end
  return table.concat(parts, ' · ')
end

--- `:Stepwise status`: the run state, the plan, context use and the latest compaction.
---@param folder table
---@return string[]
function M.status_lines(folder)
  local lines = { 'stepwise: ' .. (folder.state or 'idle') }
  local p = folder.plan
  if p and p.items and #p.items > 0 then
    local item = M.active_item(p)
    lines[#lines + 1] = string.format('plan: %s/%s%s', p.completed or 0, p.total or #p.items, item and (' ▸ ' .. tostring(item.text)) or '')
  end
  local u = folder.usage
  local window, used = u and tonumber(u.contextWindow), u and tonumber(u.contextTokens)
  if window and window > 0 and used then
    local line = string.format('context: %s of %s tokens (%d%%)', short(used), short(window), math.floor(100 * used / window + 0.5))
    local input, read = tonumber(u.inputTokens), tonumber(u.cacheReadTokens)
    if input and input > 0 and read and read > 0 then
      line = line .. string.format(' · %d%% of the prompt from the cache', math.floor(100 * read / input + 0.5))
    end
    lines[#lines + 1] = line
  end
  local c = folder.compacted
  if c then
    local line = string.format('compacted: %s → %s tokens; the plan is kept', short(c.tokensBefore), short(c.tokensAfter))
    if c.summaryError then
      line = line .. ' (no summary: ' .. c.summaryError .. ')'
    end
    lines[#lines + 1] = line
  end
  vim.list_extend(lines, mcp.status_lines(folder))
  local running = {}
  for _, t in ipairs(folder.jobs or {}) do
    if t.running then
      running[#running + 1] = t.id
    end
  end
  if #running > 0 then
    lines[#lines + 1] = string.format('background: %d running (%s); :Stepwise jobs', #running, table.concat(running, ', '))
  end
  local sessions = folder.uri and state.folders[folder.uri] and state.sessions(folder.uri) or {}
  if #sessions > 1 then
    local busy = #vim.tbl_filter(function(s)
      return s.state ~= 'idle'
    end, sessions)
    lines[#lines + 1] = string.format('session: %s (of %d, %d running); :Stepwise sessions', folder.title or folder.session, #sessions, busy)
  end
  return lines
end

-- the floating window
local win ---@type integer?
local buf ---@type integer?
local shown_ws ---@type string? the key of the session shown (its folder's uri for the folder's own)

local function win_valid()
  return win ~= nil and api.nvim_win_is_valid(win)
end

function M.is_open()
  return win_valid()
end

--- The key of the session the window shows (state.get takes it).
function M.workspace()
  return win_valid() and shown_ws or nil
end

local function ensure_buf()
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].filetype = 'stepwiseplan'
  vim.keymap.set('n', 'q', function()
    M.close()
  end, { buffer = buf, nowait = true, desc = 'stepwise: close the plan' })
  vim.keymap.set('n', '<Esc>', function()
    M.close()
  end, { buffer = buf, nowait = true, desc = 'stepwise: close the plan' })
  return buf
end

local function title_for(folder)
  local name = folder and folder.path and state.label(folder) or ''
  local t = ' stepwise '
  if name ~= '' then
    t = ' stepwise · ' .. name .. ' '
  end
  if folder and folder.state and folder.state ~= 'idle' then
    t = t .. '(' .. folder.state .. ') '
  end
  local failed = mcp.short(folder)
  return failed and (t .. failed .. ' ') or t
end

local function geometry(lines, folder)
  local opts = config.get().plan_window or {}
  local width = vim.fn.strdisplaywidth(title_for(folder)) + 2
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  local max_width = math.max(20, math.min(opts.max_width or 80, vim.o.columns - 4))
  width = math.min(width + 1, max_width)
  local height = math.max(1, math.min(#lines, vim.o.lines - 4))
  return {
    relative = 'editor',
    anchor = 'NE',
    row = 1,
    col = vim.o.columns - 1,
    width = width,
    height = height,
  }
end

---@param folder table the workspace state (see stepwise.state)
local function fill(folder)
  local b = ensure_buf()
  local lines, groups = M.render(folder and folder.plan)
  vim.bo[b].modifiable = true
  api.nvim_buf_set_lines(b, 0, -1, false, lines)
  vim.bo[b].modifiable = false
  api.nvim_buf_clear_namespace(b, ns, 0, -1)
  for i, group in ipairs(groups) do
    if group and lines[i] ~= '' then
      api.nvim_buf_set_extmark(b, ns, i - 1, 0, { end_col = #lines[i], hl_group = group })
    end
  end
  return lines
end

--- Open the window on a workspace's plan.
---@param folder table
function M.open(folder)
  local lines = fill(folder)
  local opts = config.get().plan_window or {}
  local cfg = geometry(lines, folder)
  cfg.style = 'minimal'
  cfg.border = opts.border or 'rounded'
  cfg.focusable = true
  cfg.zindex = 45
  if vim.fn.has('nvim-0.9') == 1 and cfg.border ~= 'none' then
    cfg.title = title_for(folder)
    cfg.title_pos = 'center'
  end
  -- Context use and compactions in the border's footer (0.10+), so the plan's lines stay the plan.
  local ctx = M.context_text(folder)
  if ctx and vim.fn.has('nvim-0.10') == 1 and cfg.border ~= 'none' then
    cfg.footer = ' ' .. ctx .. ' '
    cfg.footer_pos = 'right'
  end
  if win_valid() then
    api.nvim_win_set_config(win, cfg)
  else
    win = api.nvim_open_win(ensure_buf(), false, cfg)
    vim.wo[win].wrap = false
    vim.wo[win].winhighlight = 'NormalFloat:StepwisePlanNormal,FloatBorder:StepwisePlanBorder'
  end
  shown_ws = folder.key or folder.uri
end

function M.close()
  if win_valid() then
    api.nvim_win_close(win, true)
  end
  win = nil
  shown_ws = nil
end

---@param folder table
function M.toggle(folder)
  if win_valid() then
    M.close()
  else
    M.open(folder)
  end
end

--- Called on every plan or state change of a workspace.
---@param folder table
function M.update(folder)
  if win_valid() and shown_ws == (folder.key or folder.uri) then
    M.open(folder)
  end
end

--- The footer shown under the window (context use), nil when closed or none.
function M.footer()
  if not win_valid() then
    return nil
  end
  local f = api.nvim_win_get_config(win).footer
  if type(f) == 'table' then
    local parts = {}
    for _, chunk in ipairs(f) do
      parts[#parts + 1] = type(chunk) == 'table' and chunk[1] or tostring(chunk)
    end
    f = table.concat(parts)
  end
  return f
end

--- Lines shown in the window (for tests and statuslines); nil when closed.
function M.lines()
  if not win_valid() then
    return nil
  end
  return api.nvim_buf_get_lines(api.nvim_win_get_buf(win), 0, -1, false)
end

function M.reposition()
  if win_valid() and shown_ws then
    local folder = state.get(shown_ws)
    if folder then
      M.open(folder)
    end
  end
end

return M
