-- Virtual text at the line the agent is editing, naming the in-progress step of the plan.
local M = {}

local api = vim.api
local config = require('stepwise.config')
local plan = require('stepwise.plan')
M.ns = api.nvim_create_namespace('stepwise.step')

local function step_text(folder)
  local item = plan.active_item(folder.plan)
  if item then
    local t = item.activeForm
    if type(t) ~= 'string' or t == '' then
      t = item.text
    end
    return tostring(t or '')
  end
  return folder.edit_step
end

---@param folder stepwise.Folder
local function draw(folder)
  local m = folder.mark
  if not m or not api.nvim_buf_is_valid(m.buf) then
    folder.mark = nil
    return
  end
  local line = m.line
  if m.id then
    local pos = api.nvim_buf_get_extmark_by_id(m.buf, M.ns, m.id, {})
    line = pos[1] or line
  end
  local count = api.nvim_buf_line_count(m.buf)
  line = math.max(0, math.min(line or 0, count - 1))
  local step = step_text(folder)
  local text = step and step ~= '' and ('stepwise ▸ ' .. step:gsub('\n', ' ')) or 'stepwise ✎'
  m.id = api.nvim_buf_set_extmark(m.buf, M.ns, line, 0, {
    id = m.id,
    virt_text = { { '  ' .. text, 'StepwiseStep' } },
    virt_text_pos = 'eol',
    hl_mode = 'combine',
    priority = 200,
  })
  m.line = line
end

--- Record that the agent just edited `line` of `buf` in `folder`.
---@param folder stepwise.Folder
---@param buf integer
---@param line integer 0-based
---@param label_step string? the plan step named in the edit's label
function M.edited(folder, buf, line, label_step)
  if not config.get().virtual_text then
    return
  end
  if label_step and label_step ~= '' then
    folder.edit_step = label_step
  end
  if folder.mark and folder.mark.buf ~= buf then
    M.clear(folder)
  end
  if folder.mark and folder.mark.buf == buf then
    pcall(api.nvim_buf_del_extmark, buf, M.ns, folder.mark.id)
    folder.mark.id = nil
  end
  folder.mark = { buf = buf, line = line }
  draw(folder)
end

--- Redraw with the current in-progress step (after a plan change).
---@param folder stepwise.Folder
function M.update(folder)
  if folder.mark then
    draw(folder)
  end
end

---@param folder stepwise.Folder
function M.clear(folder)
  local m = folder.mark
  if m and api.nvim_buf_is_valid(m.buf) and m.id then
    pcall(api.nvim_buf_del_extmark, m.buf, M.ns, m.id)
  end
  folder.mark = nil
  folder.edit_step = nil
end

--- The step virtual text currently shown in a buffer: { line = 0-based, text = string } or nil.
---@param buf integer
function M.get(buf)
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, M.ns, 0, -1, { details = true })) do
    local details = mark[4] or {}
    local chunks = details.virt_text or {}
    local text = {}
    for _, c in ipairs(chunks) do
      text[#text + 1] = c[1]
    end
    return { line = mark[2], text = vim.trim(table.concat(text)) }
  end
end

return M
