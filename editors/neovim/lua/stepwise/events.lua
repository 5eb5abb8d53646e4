-- A small in-process event bus: the handlers publish what the server streams, views (the chat, the
-- review signs) subscribe. It requires nothing, so no view has to be known by the handlers (no
-- require circle) and nothing is paid for a view that is not open.
local M = {}

---@type table<string, table<integer, fun(data: any)>>
local subs = {}
local next_id = 0

--- Subscribe `fn` to `name`; returns a function that unsubscribes.
---@param name string
---@param fn fun(data: any)
---@return fun()
function M.on(name, fn)
  next_id = next_id + 1
  local id = next_id
  subs[name] = subs[name] or {}
  subs[name][id] = fn
  return function()
    if subs[name] then
      subs[name][id] = nil
    end
  end
end

--- Call every subscriber of `name` (an error in one is reported and does not stop the others).
---@param name string
---@param data any
function M.emit(name, data)
  local list = subs[name]
  if not list then
    return
  end
  for _, fn in pairs(list) do
    local ok, err = pcall(fn, data)
    if not ok then
      vim.notify('stepwise: ' .. name .. ' subscriber: ' .. tostring(err), vim.log.levels.ERROR)
    end
  end
end

return M
