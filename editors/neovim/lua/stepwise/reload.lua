-- A buffer whose file changed on disk, reloaded before its diagnostics are answered (issue 36), as 'autoread'
-- would at the next focus: a command the agent ran changed it, and its language servers must check the text the
-- command left, not the old one (a buffer loaded for the question about its errors from before the change would
-- answer the old text's). The text is compared, not the file's time: a change in the same second as the read,
-- of the same size, is one 'checktime' misses. A buffer with unsaved changes is left alone.
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
  local eol = disk[#disk] == ''
  if eol then
    disk[#disk] = nil
  end
  if vim.deep_equal(disk, api.nvim_buf_get_lines(buf, 0, -1, false)) then
    return false
  end
  -- The text replaced in place rather than by ':edit!': a reload closes and reopens the document for its
  -- servers, and a server that answers the close with empty diagnostics (pylsp does) would read as the new
  -- text's check, clean, before the real one comes. In place, the servers get one didChange, and the buffer
  -- keeps its marks and undo (the command's change is one undo step, as an agent's edit is).
  local ok_set = pcall(api.nvim_buf_set_lines, buf, 0, -1, false, disk)
  if not ok_set then
    return false
  end
  vim.bo[buf].eol = eol
  vim.bo[buf].modified = false
  return true
end

return M
