-- The short status for a statusline (`require('stepwise').statusline()`): the run's state or the plan's
-- progress, the folder's running background tasks (`· 1 job`: they run between runs too, so the count comes
-- from `stepwise/background`, not from the last status), the folder's sessions running (`· 2 sessions running`,
-- when it has more than one) and a failed MCP server. It speaks of the session in view, named when not the folder's own.
local plan = require('stepwise.plan')
local mcp = require('stepwise.mcp')
local state = require('stepwise.state')

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

--- ` · 2 sessions running` while sessions of the folder run (any of them; said only when it has more than one).
function M.sessions(folder)
  if not folder or not state.folders[folder.uri or ''] then
    return ''
  end
  local all, n = state.sessions(folder.uri), 0
  for _, s in ipairs(all) do
    if s.state == 'running' or s.state == 'waiting' then
      n = n + 1
    end
  end
  return (#all > 1 and n > 0) and string.format(' · %d session%s running', n, n == 1 and '' or 's') or ''
end

--- `stepwise 1/3 ▸ step (waiting) · 1 job · 2 sessions running ⚠ MCP: docs failed`; `stepwise running`; '' when
--- nothing to say. A session other than the folder's own is named: `stepwise [Fix tests] 1/3 ▸ step`.
function M.line(folder)
  local p = folder.plan
  local jobs, failed = M.jobs(folder) .. M.sessions(folder), mcp.short(folder)
  local head = (folder.session and folder.session ~= state.MAIN) and ('stepwise [' .. (folder.title or folder.session) .. ']') or 'stepwise'
  local s
  if p and p.items and #p.items > 0 then
    s = string.format('%s %s/%s', head, p.completed or 0, p.total or #p.items)
    local item = plan.active_item(p)
    if item then
      s = s .. ' ▸ ' .. tostring(item.text)
    end
    if folder.state == 'waiting' then
      s = s .. ' (waiting)'
    end
  elseif folder.state ~= 'idle' and folder.state ~= nil then
    s = head .. ' ' .. folder.state
  elseif jobs ~= '' or failed or head ~= 'stepwise' then
    s = head
  else
    return ''
  end
  s = s .. jobs
  return failed and (s .. ' ' .. failed) or s
end

return M
