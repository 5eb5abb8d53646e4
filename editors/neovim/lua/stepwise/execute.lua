-- Running a stepwise.* command of the server for a folder's session (shared by :Stepwise and the views).
local M = {}

local util = require('stepwise.util')
local client = require('stepwise.client')

--- Run a stepwise.* command for a folder's session (`session` named unless it is the folder's own);
--- `cb(err, result)` gets the answer (an error is also shown with vim.notify unless `quiet`).
---@param folder stepwise.Folder
---@param command string
---@param extra table?
---@param cb fun(err: lsp.ResponseError?, result: any)?
---@param quiet boolean?
function M.execute(folder, command, extra, cb, quiet)
  client.with_client(folder.path, function(c)
    local at = { workspace = folder.uri }
    if folder.session and folder.session ~= 'main' then
      at.session = folder.session
    end
    local args = vim.tbl_extend('force', at, extra or {})
    util.request(c, 'workspace/executeCommand', { command = command, arguments = { args } }, function(err, result)
      if err and not quiet then
        util.notify(command .. ': ' .. tostring(err.message or err), vim.log.levels.WARN)
      end
      if cb then
        cb(err, result)
      end
    end)
  end)
end

return M
