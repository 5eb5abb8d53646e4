-- A folder's background tasks (`background_run`): what `stepwise/background` says of them (every task of the
-- session, each time one starts, prints or ends), `:Stepwise jobs` (a float listing them with their command,
-- state and output tail, live; `x` stops the task under the cursor) and `:Stepwise kill ID`. A task's end is
-- a transcript line and a `job_ended` event (the chat shows it), also after the run ended.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')
local events = require('stepwise.events')
local log = require('stepwise.log')
local execute = require('stepwise.execute').execute

--- Lines of output shown per task in the float.
M.tail_lines = 8

local ns = api.nvim_create_namespace('stepwise.jobs')
local view = { buf = nil, win = nil, key = nil, rows = {} } -- key: the session shown; rows: first line (1-based) -> task id

local function str(v)
  return (v == nil or v == vim.NIL) and '' or tostring(v)
end

---@class stepwise.Job
---@field id string `bg-<n>`
---@field command string
---@field state string `running`, `exited <code>` or `killed by <what>`
---@field running boolean
---@field tail string

--- The tasks of a `stepwise/background` payload, checked (one without an id is dropped).
---@return stepwise.Job[]
function M.tasks_of(params)
  local out = {}
  for _, t in ipairs(type(params) == 'table' and type(params.tasks) == 'table' and params.tasks or {}) do
    if type(t) == 'table' and str(t.id) ~= '' then
      out[#out + 1] = { id = str(t.id), command = str(t.command), state = str(t.state), running = t.running == true, tail = str(t.tail) }
    end
  end
  return out
end

--- The last `n` lines of output as text: colour codes dropped, a `\r` overwrite shows what it wrote last.
function M.tail(text, n)
  text = text:gsub('\27%[[%d;?]*[ -/]*[@-~]', ''):gsub('\n+$', '')
  local lines = {}
  for _, l in ipairs(vim.split(text, '\n', { plain = true })) do
    local parts = vim.tbl_filter(function(p)
      return p ~= ''
    end, vim.split(l, '\r', { plain = true }))
    lines[#lines + 1] = parts[#parts] or ''
  end
  if text == '' then
    return {}
  end
  return vim.list_slice(lines, math.max(1, #lines - n + 1), #lines)
end

--- A task's end in one line: `⏹ bg-1 exited 0: npm run dev`.
function M.end_line(t)
  return string.format('⏹ %s %s: %s', t.id, t.state, (t.command:gsub('%s*\n%s*', ' ')))
end

--- What the chat says of a task's end: its line, with the last lines of its output when it failed.
function M.end_note(t)
  local lines = { M.end_line(t) }
  if t.state:match('^exited %d') and t.state ~= 'exited 0' then
    for _, l in ipairs(M.tail(t.tail, 3)) do
      lines[#lines + 1] = '  ' .. l
    end
  end
  return table.concat(lines, '\n')
end

--- The float's lines, and the first line of each task.
---@param folder stepwise.Folder
function M.lines(folder)
  local jobs = folder.jobs or {}
  if #jobs == 0 then
    return { 'No background tasks in this session.' }, {}
  end
  local lines, rows = {}, {}
  for _, t in ipairs(jobs) do
    if #lines > 0 then
      lines[#lines + 1] = ''
    end
    rows[#lines + 1] = t.id
    local mark = t.running and '●' or t.state == 'exited 0' and '✓' or t.state:match('^exited') and '✗' or '■'
    lines[#lines + 1] = string.format('%s %s  %s', mark, t.id, t.state)
    lines[#lines + 1] = '  $ ' .. t.command:gsub('%s*\n%s*', ' ')
    for _, l in ipairs(M.tail(t.tail, M.tail_lines)) do
      lines[#lines + 1] = '  │ ' .. l
    end
  end
  return lines, rows
end

local function valid(x, is)
  return x and is(x)
end

--- The task of the cursor's line in the float (the nearest task line at or above it).
function M.task_at_cursor()
  if not valid(view.win, api.nvim_win_is_valid) then
    return nil
  end
  local row = api.nvim_win_get_cursor(view.win)[1]
  for r = row, 1, -1 do
    if view.rows[r] then
      return view.rows[r]
    end
  end
end

local function title(folder)
  local running = #vim.tbl_filter(function(t)
    return t.running
  end, folder.jobs or {})
  return string.format(' stepwise jobs · %s · %d running ', state.label(folder), running)
end

local function draw(folder)
  local lines, rows = M.lines(folder)
  view.rows = rows
  vim.bo[view.buf].modifiable = true
  api.nvim_buf_set_lines(view.buf, 0, -1, false, lines)
  vim.bo[view.buf].modifiable = false
  api.nvim_buf_clear_namespace(view.buf, ns, 0, -1)
  for r, id in pairs(rows) do
    local t = M.find(folder, id)
    local group = t and (t.running and 'StepwisePlanActive' or (t.state == 'exited 0' and 'StepwisePlanDone' or 'StepwisePlanFailed'))
    api.nvim_buf_set_extmark(view.buf, ns, r - 1, 0, { end_col = #lines[r], hl_group = group })
  end
  if valid(view.win, api.nvim_win_is_valid) then
    local width = math.min(math.max(60, math.floor(vim.o.columns * 0.7)), vim.o.columns - 4)
    local height = math.max(3, math.min(#lines, vim.o.lines - 6))
    local cfg = { relative = 'editor', width = width, height = height, row = math.floor((vim.o.lines - height) / 2) - 1, col = math.floor((vim.o.columns - width) / 2) }
    if vim.fn.has('nvim-0.10') == 1 then
      cfg.title, cfg.title_pos = title(folder), 'center'
      cfg.footer, cfg.footer_pos = ' x stop · q close ', 'right'
    end
    api.nvim_win_set_config(view.win, cfg)
  end
end

---@return stepwise.Job?
function M.find(folder, id)
  for _, t in ipairs(folder.jobs or {}) do
    if t.id == id then
      return t
    end
  end
end

--- `:Stepwise kill ID`: stops task `id` (its whole process tree); the server's answer is shown.
---@param folder stepwise.Folder
---@param id string?
function M.kill(folder, id)
  if not id or id == '' then
    return util.notify('usage: :Stepwise kill {task id} (:Stepwise jobs lists them)', vim.log.levels.ERROR)
  end
  execute(folder, 'stepwise.killBackground', { taskId = id }, function(err, said)
    if not err and type(said) == 'string' then
      util.notify(said, vim.log.levels.INFO)
    end
  end)
end

function M.close()
  if valid(view.win, api.nvim_win_is_valid) then
    api.nvim_win_close(view.win, true)
  end
  view.win, view.key = nil, nil
end

--- `:Stepwise jobs`: the float listing the folder's tasks, updated as they print and end; the cursor in it.
---@param folder stepwise.Folder
---@return integer buf
function M.open(folder)
  if not valid(view.buf, api.nvim_buf_is_valid) then
    view.buf = api.nvim_create_buf(false, true)
    vim.bo[view.buf].bufhidden = 'hide'
    vim.bo[view.buf].filetype = 'stepwise-jobs'
    pcall(api.nvim_buf_set_name, view.buf, 'stepwise://jobs')
    local function key(lhs, fn, desc)
      vim.keymap.set('n', lhs, fn, { buffer = view.buf, nowait = true, desc = 'stepwise: ' .. desc })
    end
    key('x', function()
      local id = M.task_at_cursor()
      local f = state.get(view.key)
      if id and f then
        M.kill(f, id)
      end
    end, 'stop the background task under the cursor')
    key('q', M.close, 'close the jobs')
    key('<Esc>', M.close, 'close the jobs')
  end
  view.key = folder.key
  if not valid(view.win, api.nvim_win_is_valid) then
    view.win = api.nvim_open_win(view.buf, true, { relative = 'editor', width = 60, height = 3, row = 1, col = 1, style = 'minimal', border = 'rounded', zindex = 50 })
    vim.wo[view.win].wrap = false
    vim.wo[view.win].winhighlight = 'NormalFloat:StepwisePlanNormal,FloatBorder:StepwisePlanBorder'
  else
    api.nvim_set_current_win(view.win)
  end
  draw(folder)
  return view.buf
end

--- Lines shown in the float (tests, statuslines); nil when closed.
function M.shown()
  if not valid(view.win, api.nvim_win_is_valid) then
    return nil
  end
  return api.nvim_buf_get_lines(view.buf, 0, -1, false)
end

--- Handler of `stepwise/background`.
function M.on_background(_, params)
  if type(params) ~= 'table' or type(params.workspace) ~= 'string' then
    return
  end
  local folder = state.of(params)
  local before = {}
  local was_running = #M.running_ids(folder)
  for _, t in ipairs(folder.jobs or {}) do
    before[t.id] = t
  end
  folder.jobs = M.tasks_of(params)
  for _, t in ipairs(folder.jobs) do
    local prev = before[t.id]
    if not t.running and (not prev or prev.running) then
      log.line(folder.key, M.end_line(t), t.state == 'exited 0' and 'StepwiseLogTool' or 'StepwiseLogError')
      events.emit('job_ended', { workspace = folder.uri, session = folder.session, id = t.id, state = t.state, note = M.end_note(t) })
    end
  end
  if view.key == folder.key and valid(view.buf, api.nvim_buf_is_valid) then
    draw(folder)
  end
  local running = #M.running_ids(folder)
  if running ~= was_running then
    -- The statusline counts the running tasks; a task's end between runs brings no `stepwise/status`.
    pcall(vim.cmd.redrawstatus)
  end
  util.emit('StepwiseBackground', { workspace = folder.uri, session = folder.session, tasks = folder.jobs, running = running })
end

--- The ids of the folder's running tasks (`:Stepwise kill <Tab>`).
function M.running_ids(folder)
  local out = {}
  for _, t in ipairs(folder and folder.jobs or {}) do
    if t.running then
      out[#out + 1] = t.id
    end
  end
  return out
end

return M
