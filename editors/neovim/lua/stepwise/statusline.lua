-- The short status for a statusline (`require('stepwise').statusline()`): the run's state or the plan's
-- progress, the folder's running background tasks (`· 1 job`: they run between runs too, so the count comes
-- from `stepwise/background`, not from the last status) and a failed MCP server.
local plan = require('stepwise.plan')
local mcp = require('stepwise.mcp')

local M = {}

--- ` · 2 jobs` while the folder's background tasks run; '' when none does.
function M.jobs(folder)
  local n = 0
  for _, t in ipairs(folder and folder.jobs or {}) do
    if t.running then
      n = n + 1
    end
  end
  return n > 0 and string.format(' · %d job%s', n, n == 1 and '' or 's') or ''
end

--- `stepwise 1/3 ▸ step (waiting) · 1 job ⚠ MCP: docs failed`; `stepwise running`; '' when nothing to say.
function M.line(folder)
  local p = folder.plan
  local jobs, failed = M.jobs(folder), mcp.short(folder)
  local s
  if p and p.items and #p.items > 0 then
    s = string.format('stepwise %s/%s', p.completed or 0, p.total or #p.items)
    local item = plan.active_item(p)
    if item then
      s = s .. ' ▸ ' .. tostring(item.text)
    end
    if folder.state == 'waiting' then
      s = s .. ' (waiting)'
    end
  elseif folder.state ~= 'idle' and folder.state ~= nil then
    s = 'stepwise ' .. folder.state
  elseif jobs ~= '' or failed then
    s = 'stepwise'
  else
    return ''
  end
  s = s .. jobs
  return failed and (s .. ' ' .. failed) or s
end

return M
