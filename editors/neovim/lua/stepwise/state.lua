-- Per-workspace-folder state, keyed by the folder uri exactly as the client sent it to the server.
local M = {}

---@class stepwise.Folder
---@field uri string
---@field path string
---@field name string
---@field plan table? last stepwise/plan params
---@field state string 'idle'|'running'|'waiting'
---@field run_id string?
---@field reason string? reason of the last idle
---@field prompt string? prompt of the current or last run
---@field prompt_pending string? prompt of a run started by a command, until its status comes (the chat shows it)
---@field mark table? {buf, id} extmark of the step virtual text
---@field step string? the plan step of the tool call in flight (from stepwise/toolCall)
---@field mcp stepwise.McpServer[]? the folder's MCP servers (stepwise/mcp)
---@field jobs stepwise.Job[]? the session's background tasks (stepwise/background, jobs.lua)

---@type table<string, stepwise.Folder>
M.folders = {}

---@param uri string
---@param path string?
---@return stepwise.Folder
function M.ensure(uri, path)
  local f = M.folders[uri]
  if not f then
    path = path or vim.uri_to_fname(uri)
    f = {
      uri = uri,
      path = path,
      name = path,
      state = 'idle',
    }
    M.folders[uri] = f
  end
  return f
end

---@param uri string?
---@return stepwise.Folder?
function M.get(uri)
  return uri and M.folders[uri] or nil
end

--- The folder that contains a path (the deepest one).
---@param path string normalized absolute path
---@return stepwise.Folder?
function M.containing(path)
  local util = require('stepwise.util')
  local best
  for _, f in pairs(M.folders) do
    if util.is_under(path, f.path) and (not best or #f.path > #best.path) then
      best = f
    end
  end
  return best
end

function M.clear()
  M.folders = {}
end

return M
