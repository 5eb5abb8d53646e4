-- Shell approvals (`window/showMessageRequest` with actions): asked with vim.ui.select, the question and
-- the answer published on the event bus (the chat shows them).
local M = {}

local util = require('stepwise.util')
local events = require('stepwise.events')

local function level_of(type_)
  local t = tonumber(type_) or 4
  if t == 1 then
    return vim.log.levels.ERROR
  elseif t == 2 then
    return vim.log.levels.WARN
  elseif t == 3 then
    return vim.log.levels.INFO
  end
  return vim.log.levels.DEBUG
end

--- window/showMessageRequest (shell approvals): vim.ui.select, answered asynchronously when the
--- handler runs in a coroutine (Neovim 0.11+), else with whatever a synchronous select returns.
function M.on_show_message_request(_, params)
  local actions = params and params.actions or {}
  local message = params and params.message or ''
  if #actions == 0 then
    util.notify(message, level_of(params and params.type))
    return vim.NIL
  end
  local opts = {
    prompt = message,
    kind = 'stepwise_approval',
    format_item = function(action)
      return (tostring(action.title):gsub('\n', ' '))
    end,
  }
  events.emit('approval', { message = message })
  local function told(choice)
    local title = type(choice) == 'table' and choice.title or 'no answer'
    events.emit('approval', { message = message, choice = tostring(title) })
  end
  local co, is_main = coroutine.running()
  if co and not is_main then
    local answered = false
    vim.ui.select(actions, opts, function(choice)
      if answered then
        return
      end
      answered = true
      told(choice)
      vim.schedule(function()
        local ok, e = coroutine.resume(co, choice or vim.NIL)
        if not ok then
          util.notify('approval: ' .. tostring(e), vim.log.levels.ERROR)
        end
      end)
    end)
    return coroutine.yield()
  end
  local result = vim.NIL
  vim.ui.select(actions, opts, function(choice)
    result = choice or vim.NIL
    told(choice)
  end)
  return result
end

return M
