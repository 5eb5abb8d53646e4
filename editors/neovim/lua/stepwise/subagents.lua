-- A session's child agents (subagents: the `task` tool): what `stepwise/subagent` says of them (the folder's
-- state keeps those running, for `:Stepwise stop <Tab>`), a transcript line when one starts and ends, a
-- `subagent` event (the chat draws the child under its `task` call) and `:Stepwise stop sa-<n>`, which ends
-- that child alone (stepwise.cancelSubagent); the run goes on with the child's summary.
local M = {}

local util = require('stepwise.util')
local events = require('stepwise.events')
local log = require('stepwise.log')
local client = require('stepwise.client')
local execute = require('stepwise.execute').execute

--- A child's line in the transcript: `sa-1 (general) read the parser: done · 3 rounds · 1830 tokens`.
local function line(p)
  return string.format('↳ %s (%s) %s: %s · %s rounds · %s tokens', tostring(p.id), tostring(p.agent or '?'),
    tostring(p.description or ''), tostring(p.state), tostring(p.rounds or 0), tostring(p.tokens or 0))
end

--- stepwise/subagent: a child started, went on (a round, a call) or ended.
function M.on_subagent(_, params)
  local folder = type(params) == 'table' and type(params.id) == 'string' and client.folder_of(params)
  if not folder then
    return
  end
  folder.subagents = folder.subagents or {}
  local known = folder.subagents[params.id]
  if params.state == 'running' then
    folder.subagents[params.id] = params
  else
    -- only those running are kept: what can be stopped
    folder.subagents[params.id] = nil
  end
  if not known or params.state ~= 'running' then
    log.line(folder.key, line(params), params.state == 'failed' and 'StepwiseLogError' or 'StepwiseLogTool')
  end
  events.emit('subagent', vim.tbl_extend('force', params, { workspace = folder.uri, session = folder.session }))
  util.emit('StepwiseSubagent', params)
end

--- The ids of a session's running children (`:Stepwise stop <Tab>`), in order.
---@param folder stepwise.Folder?
---@return string[]
function M.running_ids(folder)
  local ids = vim.tbl_keys(folder and folder.subagents or {})
  table.sort(ids, function(a, b)
    return (tonumber(a:match('%d+$')) or 0) < (tonumber(b:match('%d+$')) or 0)
  end)
  return ids
end

--- `:Stepwise stop sa-<n>`: end that child alone (the server says when none runs by that id).
---@param folder stepwise.Folder
---@param id string?
function M.stop(folder, id)
  if not id or not id:match('^sa%-%d+$') then
    local running = M.running_ids(folder)
    local now = #running > 0 and ('running: ' .. table.concat(running, ', ')) or 'none runs'
    return util.notify('usage: :Stepwise stop sa-<n> (a child agent; ' .. now .. ')', vim.log.levels.ERROR)
  end
  execute(folder, 'stepwise.cancelSubagent', { id = id }, function(err)
    if not err then
      log.line(folder.key, '■ you stopped ' .. id, 'StepwiseLogHeader')
    end
  end)
end

return M
