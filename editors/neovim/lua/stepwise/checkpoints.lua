-- Checkpoints and rewind: `:Stepwise checkpoints` (a picker; choosing one asks, then rewinds to it) and
-- `:Stepwise rewind {id}`. Files go back through the server (open buffers through workspace/applyEdit, so
-- `u` undoes the rewind); the conversation and the plan go back too.
local M = {}

local util = require('stepwise.util')
local log = require('stepwise.log')
local events = require('stepwise.events')

--- One line of the picker: `round 2 · Add a farewell · "prompt" · 3 files`.
---@param c table a checkpoint of stepwise.checkpoints
---@return string
function M.format(c)
  local parts = { c.round and ('round ' .. tostring(c.round)) or tostring(c.id) }
  if type(c.step) == 'string' and c.step ~= '' then
    parts[#parts + 1] = c.step
  end
  if type(c.prompt) == 'string' and c.prompt ~= '' then
    parts[#parts + 1] = '"' .. c.prompt:gsub('%s+', ' '):sub(1, 40) .. '"'
  end
  local n = type(c.files) == 'table' and #c.files or 0
  parts[#parts + 1] = n == 1 and '1 file' or (n .. ' files')
  return table.concat(parts, ' · ')
end

--- The outcome of a rewind in words.
---@param r table? the result of stepwise.rewind
---@return string
function M.summary(r)
  r = type(r) == 'table' and r or {}
  local n = type(r.files) == 'table' and #r.files or 0
  local s = string.format('rewound %d file%s', n, n == 1 and '' or 's')
  if r.conversation then
    s = s .. '; the conversation and the plan are back as they were'
  end
  if type(r.conflicts) == 'table' and #r.conflicts > 0 then
    s = s .. '; left alone, changed since by you: ' .. table.concat(r.conflicts, ', ')
  end
  return s
end

--- Rewinds the folder to checkpoint `id`.
---@param execute fun(folder: stepwise.Folder, command: string, extra: table?, cb: fun(err: any, result: any)?)
---@param folder stepwise.Folder
---@param id string
function M.rewind(execute, folder, id)
  execute(folder, 'stepwise.rewind', { checkpoint = id }, function(err, result)
    if err then
      return
    end
    local summary = M.summary(result)
    log.line(folder.key, '⟲ ' .. summary, 'StepwiseLogHeader')
    local conflicts = type(result) == 'table' and type(result.conflicts) == 'table' and #result.conflicts > 0
    util.notify(summary, conflicts and vim.log.levels.WARN or vim.log.levels.INFO)
    if type(result) == 'table' and result.conversation then
      events.emit('reload', { workspace = folder.uri, session = folder.session })
    end
    util.emit('StepwiseRewound', { workspace = folder.uri, session = folder.session, checkpoint = id, result = result })
  end)
end

--- The picker: newest first; choosing one asks before rewinding.
---@param execute fun(folder: stepwise.Folder, command: string, extra: table?, cb: fun(err: any, result: any)?)
---@param folder stepwise.Folder
function M.pick(execute, folder)
  execute(folder, 'stepwise.checkpoints', nil, function(err, result)
    if err or type(result) ~= 'table' then
      return
    end
    if #result == 0 then
      util.notify('no checkpoints yet; one is taken before every round of a run')
      return
    end
    local items = {}
    for i = #result, 1, -1 do
      items[#items + 1] = result[i]
    end
    vim.ui.select(items, { prompt = 'stepwise: rewind to', format_item = M.format }, function(c)
      if not c then
        return
      end
      local files = type(c.files) == 'table' and c.files or {}
      local what = #files > 0 and ('files back: ' .. table.concat(files, ', ')) or 'no file changed after it'
      vim.ui.select({ 'Rewind', 'Cancel' }, { prompt = 'Rewind (' .. what .. '; the conversation and plan too)?' }, function(choice)
        if choice == 'Rewind' then
          M.rewind(execute, folder, c.id)
        end
      end)
    end)
  end)
end

return M
