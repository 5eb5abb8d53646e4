-- Small helpers shared by the modules (Neovim 0.11: the client's methods are called with `:`).
local M = {}

---@param client vim.lsp.Client
function M.request(client, method, params, handler, bufnr)
  return client:request(method, params, handler, bufnr)
end

---@param client vim.lsp.Client
function M.notify_server(client, method, params)
  return client:notify(method, params)
end

---@param client vim.lsp.Client?
function M.is_stopped(client)
  return not client or client:is_stopped()
end

---@param client vim.lsp.Client
function M.stop(client, force)
  return client:stop(force)
end

--- vim.notify with the plugin's prefix.
function M.notify(msg, level)
  vim.notify('stepwise: ' .. msg, level or vim.log.levels.INFO, { title = 'stepwise' })
end

--- Absolute, normalized path without a trailing slash.
---@param path string
---@return string
function M.normalize(path)
  local p = vim.fs.normalize(vim.fn.fnamemodify(path, ':p'))
  if #p > 1 then
    p = p:gsub('/+$', '')
  end
  return p
end

--- Whether `path` is `dir` or inside it.
function M.is_under(path, dir)
  if path == dir then
    return true
  end
  local prefix = dir == '/' and '/' or dir .. '/'
  return path:sub(1, #prefix) == prefix
end

--- The loaded buffer whose file is `fname`, if any.
---@param fname string
---@return integer?
function M.find_buf(fname)
  local want = M.normalize(fname)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local name = vim.api.nvim_buf_get_name(b)
    if name ~= '' and not name:find('://', 1, true) and M.normalize(name) == want then
      return b
    end
  end
end

--- Break the undo sequence of a buffer so that the next change starts its own undo block.
--- (Setting 'undolevels', even to its own value, closes the undo block: |undo-break|.)
---@param buf integer
function M.break_undo(buf)
  if not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local ul = vim.api.nvim_get_option_value('undolevels', { buf = buf })
  vim.api.nvim_set_option_value('undolevels', ul, { buf = buf })
end

--- Fire `User <pattern>` autocommands with data (for statuslines, tests and user hooks).
function M.emit(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, data = data, modeline = false })
end

return M
