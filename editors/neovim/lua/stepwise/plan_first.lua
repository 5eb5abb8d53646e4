-- Plan first: `:Stepwise run! {task}` plans before it acts (the model is offered only what changes nothing),
-- `:Stepwise plan first [off]` does so for every run, `:Stepwise plan approve[!]` carries the ready plan out
-- (`!`: from a fresh context, the task and the plan only), and lines `> comment` under an item of the plan
-- edit buffer (`:Stepwise plan edit`) go to the model as comments, one planning round, on `:w`.
local M = {}

local util = require('stepwise.util')
local execute = require('stepwise.execute').execute

--- `:Stepwise plan first`: every run of this Neovim plans first.
M.enabled = false

--- The `mode` a run asks for: `plan` when `bang` or plan first is on, else the server's setting decides.
---@param bang boolean?
---@return string?
function M.mode(bang)
  if bang or M.enabled then
    return 'plan'
  end
end

---@param on boolean
function M.set(on)
  M.enabled = on
  util.notify(on and 'plan first: on (each run plans and waits for :Stepwise plan approve)' or 'plan first: off')
end

--- The comments of a plan buffer: a line `> text` is about the item above it (`#id:`), or about the whole
--- plan when no item comes before it. Returns the comments and the other lines.
---@param lines string[]
---@return {id: string?, text: string}[] comments
---@return string[] rest
function M.split(lines)
  local comments, rest, id = {}, {}, nil
  for _, line in ipairs(lines) do
    local text = line:match('^%s*>%s?(.*)$')
    if text then
      text = vim.trim(text)
      if text ~= '' then
        comments[#comments + 1] = { id = id, text = text }
      end
    else
      rest[#rest + 1] = line
      id = line:match('^%s*%[.%]%s*#([^:%s]+):') or id
    end
  end
  return comments, rest
end

--- `stepwise.commentPlan` with the comments; `cb(err)` after.
function M.comment(folder, comments, cb)
  execute(folder, 'stepwise.commentPlan', { comments = comments }, function(err, result)
    if not err and type(result) == 'table' and result.runId then
      folder.run_id = result.runId
      util.notify('comments sent: the model revises the plan')
    end
    if cb then
      cb(err)
    end
  end)
end

--- `:Stepwise plan approve[!]`.
---@param fresh boolean
function M.approve(folder, fresh)
  local args = { clearContext = fresh }
  if folder.plan and type(folder.plan.revision) == 'number' then
    args.baseRevision = folder.plan.revision
  end
  execute(folder, 'stepwise.approvePlan', args, function(err, result)
    if not err and type(result) == 'table' and result.runId then
      folder.run_id = result.runId
      util.notify(fresh and 'plan approved: carrying it out from a fresh context' or 'plan approved: carrying it out')
    end
  end)
end

return M
