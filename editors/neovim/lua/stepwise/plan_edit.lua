-- The plan as a buffer the user edits (`:Stepwise plan edit`): the plan's render form (`[ ] #1: text`,
-- `[>]`, `[x]`; a line without `#id:` is a new item), applied with `:w` through `stepwise.editPlan` on the
-- revision the buffer shows. A broken rule or a plan that changed meanwhile is reported and the buffer kept.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local execute = require('stepwise.execute').execute
local plan_first = require('stepwise.plan_first')

local MARK = { completed = 'x', in_progress = '>', pending = ' ' }

--- The render form of a plan, as lines (the `todo` tool's result).
---@param p table? plan params
---@return string[]
function M.render(p)
  local items = p and p.items or {}
  if #items == 0 then
    return { 'No todos.' }
  end
  local lines, done = {}, 0
  for _, it in ipairs(items) do
    local status = tostring(it.status or 'pending')
    if status == 'completed' then
      done = done + 1
    end
    lines[#lines + 1] = string.format('[%s] #%s: %s', MARK[status] or ' ', tostring(it.id), tostring(it.text or ''))
  end
  lines[#lines + 1] = ''
  lines[#lines + 1] = string.format('(%d/%d completed)', p.completed or done, p.total or #items)
  return lines
end

--- The text sent for a buffer's lines (`No todos.` is the empty plan).
---@param lines string[]
---@return string
function M.text_of(lines)
  local text = table.concat(lines, '\n')
  if vim.trim(text) == 'No todos.' then
    return ''
  end
  return text
end

---@type table<string, integer> session key (state.key) -> buffer
M.buffers = {}

local function buf_of(uri)
  local buf = M.buffers[uri]
  if buf and api.nvim_buf_is_valid(buf) then
    return buf
  end
  M.buffers[uri] = nil
end

--- Shows the folder's plan in the buffer (as the server keeps it) and marks it unmodified.
local function fill(buf, folder)
  api.nvim_buf_set_lines(buf, 0, -1, false, M.render(folder.plan))
  vim.b[buf].stepwise_plan_revision = folder.plan and folder.plan.revision or nil
  vim.bo[buf].modified = false
end

--- `:w` in a plan buffer.
---@param buf integer
---@param folder stepwise.Folder
function M.write(buf, folder)
  -- Lines `> comment` are plan first's comments, not steps (plan_first.lua).
  local comments, lines = plan_first.split(api.nvim_buf_get_lines(buf, 0, -1, false))
  if #comments > 0 and M.text_of(lines) == M.text_of(M.render(folder.plan)) then
    return plan_first.comment(folder, comments, function(err)
      if not err and api.nvim_buf_is_valid(buf) then
        fill(buf, folder)
      end
    end)
  end
  if #comments > 0 then
    util.notify('plan not changed: comment (> lines) or edit the steps, one at a time', vim.log.levels.ERROR)
    return
  end
  local args = { text = M.text_of(lines) }
  local base = vim.b[buf].stepwise_plan_revision
  if type(base) == 'number' then
    args.baseRevision = base
  end
  execute(folder, 'stepwise.editPlan', args, function(err, result)
    if err then
      local msg = tostring(err.message or err)
      if msg:find('changed', 1, true) then
        msg = msg .. ' (:edit! shows the plan as it is now)'
      end
      -- The buffer keeps the user's text, still modified.
      util.notify('plan not changed: ' .. msg, vim.log.levels.ERROR)
      util.emit('StepwisePlanEditError', { workspace = folder.uri, session = folder.session, message = msg })
      return
    end
    if type(result) == 'table' and type(result.items) == 'table' then
      if not folder.plan or not folder.plan.revision or not result.revision or result.revision >= folder.plan.revision then
        folder.plan = { items = result.items, completed = result.completed, total = result.total, revision = result.revision, by = 'user' }
      end
    end
    if api.nvim_buf_is_valid(buf) then
      fill(buf, folder)
    end
    util.emit('StepwisePlanEdited', { workspace = folder.uri, session = folder.session, plan = folder.plan })
  end, true)
end

--- `:Stepwise plan edit`: opens (or shows again) the folder's plan buffer in the current window.
---@param folder stepwise.Folder
---@return integer buf
function M.open(folder)
  local buf = buf_of(folder.key or folder.uri)
  if not buf then
    buf = api.nvim_create_buf(true, false)
    M.buffers[folder.key or folder.uri] = buf
    local session = (folder.session and folder.session ~= 'main') and ('/' .. folder.session) or ''
    api.nvim_buf_set_name(buf, 'stepwise://plan/' .. vim.fn.fnamemodify(folder.path, ':t') .. session)
    vim.bo[buf].buftype = 'acwrite'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'stepwiseplan'
    vim.b[buf].stepwise_session = folder.key
    api.nvim_create_autocmd('BufWriteCmd', {
      buffer = buf,
      callback = function()
        M.write(buf, folder)
      end,
    })
    -- `:e!` shows the plan as the server keeps it now.
    api.nvim_create_autocmd('BufReadCmd', {
      buffer = buf,
      callback = function()
        fill(buf, folder)
      end,
    })
    api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      callback = function()
        M.buffers[folder.key or folder.uri] = nil
      end,
    })
    fill(buf, folder)
  end
  api.nvim_set_current_buf(buf)
  return buf
end

--- A new plan arrived: an open plan buffer the user has not changed follows it.
---@param folder stepwise.Folder
function M.refresh(folder)
  local buf = buf_of(folder.key or folder.uri)
  if buf and not vim.bo[buf].modified then
    fill(buf, folder)
  end
end

return M
