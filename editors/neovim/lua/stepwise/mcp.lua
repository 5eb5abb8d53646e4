-- A folder's MCP servers as `stepwise/mcp` reports them (once they all started or failed, at the folder's
-- first run), and the failed ones in words: `:Stepwise status`, the plan window's title, the statusline.
-- Words only: it requires nothing (the handler that keeps the list is in handlers.lua).
local M = {}

---@class stepwise.McpServer
---@field name string
---@field origin string? user | workspace | settings | client
---@field state string running | failed
---@field tools integer?
---@field error string?

--- The servers of a payload; malformed entries are left out.
---@return stepwise.McpServer[]
function M.servers(params)
  local out = {}
  if type(params) ~= 'table' or type(params.servers) ~= 'table' then
    return out
  end
  for _, s in ipairs(params.servers) do
    if type(s) == 'table' and type(s.name) == 'string' then
      out[#out + 1] = {
        name = s.name,
        origin = type(s.origin) == 'string' and s.origin or nil,
        state = tostring(s.state),
        tools = tonumber(s.tools),
        error = type(s.error) == 'string' and s.error or nil,
      }
    end
  end
  return out
end

---@param folder table?
---@return stepwise.McpServer[]
function M.failed(folder)
  local out = {}
  for _, s in ipairs(folder and folder.mcp or {}) do
    if s.state == 'failed' then
      out[#out + 1] = s
    end
  end
  return out
end

local function one_line(s, max)
  s = s:gsub('%s+', ' ')
  if vim.fn.strchars(s) > max then
    s = vim.fn.strcharpart(s, 0, max - 1) .. '…'
  end
  return s
end

--- `MCP server docs (settings) failed: connection refused`
function M.failure_line(s)
  local origin = s.origin and (' (' .. s.origin .. ')') or ''
  local why = s.error and (': ' .. one_line(s.error, 300)) or ''
  return 'MCP server ' .. s.name .. origin .. ' failed' .. why
end

--- One line per failed server, for `:Stepwise status`.
---@return string[]
function M.status_lines(folder)
  return vim.tbl_map(M.failure_line, M.failed(folder))
end

--- A short warning for titles and statuslines: `⚠ MCP: docs failed`; nil when none failed.
---@return string?
function M.short(folder)
  local failed = M.failed(folder)
  if #failed == 0 then
    return nil
  end
  local names = #failed <= 2 and table.concat(vim.tbl_map(function(s)
    return s.name
  end, failed), ', ') or (#failed .. ' servers')
  return '⚠ MCP: ' .. names .. ' failed'
end

return M
