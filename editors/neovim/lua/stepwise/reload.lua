-- A buffer whose file changed on disk, reloaded before its diagnostics are answered (issue 36), as 'autoread'
-- would at the next focus: a command the agent ran changed it, and its language servers must check the text the
-- command left, not the old one (a buffer loaded for the question about its errors from before the change would
-- answer the old text's). The text is compared, not the file's time: a change in the same second as the read,
-- of the same size, is one 'checktime' misses. Unsaved changes are kept; so is whether the buffer is listed.
local M = {}
local api = vim.api

--- The buffer's 'autoread' (global-local: its own value, else the global one).
local function autoread(buf)
  local ok, value = pcall(api.nvim_get_option_value, 'autoread', { buf = buf })
  if ok and type(value) == 'boolean' then
    return value
  end
  return vim.o.autoread
end

--- Reloads the buffer when its file on disk holds another text; true when it did.
function M.if_changed(buf)
  if vim.bo[buf].modified or not autoread(buf) then
    return false
  end
  local ok, disk = pcall(vim.fn.readfile, api.nvim_buf_get_name(buf), 'b')
  if not ok or type(disk) ~= 'table' then
    return false
  end
  if disk[#disk] == '' then
    disk[#disk] = nil
  end
  if vim.deep_equal(disk, api.nvim_buf_get_lines(buf, 0, -1, false)) then
    return false
  end
  local listed = vim.bo[buf].buflisted
  pcall(api.nvim_buf_call, buf, function()
    vim.cmd('silent! edit!')
  end)
  vim.bo[buf].buflisted = listed
  return true
end

return M
