-- Which folder's session a command is about: the current buffer's own (a chat's or a plan buffer's session, a
-- file of a session's worktree), else the session in view of the buffer's folder, else the plan window's, else
-- the session in view of the current directory's folder.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')
local client = require('stepwise.client')
local plan = require('stepwise.plan')

local function is_file(name)
  return name ~= '' and not name:find('://', 1, true)
end

--- The session a buffer is of by itself: a chat's or plan buffer's (`b:stepwise_session`), a worktree file's.
---@param buf integer
---@return stepwise.Folder?
local function own(buf)
  local name = api.nvim_buf_get_name(buf)
  return state.get(vim.b[buf].stepwise_session) or (is_file(name) and state.worktree_session(util.normalize(name)) or nil)
end

--- The session in view of the known folder holding a path.
local function in_view_of(path)
  local f = state.containing(path)
  return f and state.in_view(f)
end

--- The session of the current buffer (else of the plan window, else of the current directory); made on first use.
---@param buf integer?
---@return stepwise.Folder
function M.folder(buf)
  buf = buf or api.nvim_get_current_buf()
  local root = client.root_for_buf(buf)
  if not root then
    local known = own(buf) or state.get(plan.workspace())
    if known then
      return known
    end
    root = client.root_for_path(vim.fn.getcwd()) or util.normalize(vim.fn.getcwd())
  end
  return state.in_view(client.folder_for_root(root))
end

--- The known session of a buffer (nil when none: unlike folder(), creates nothing).
---@param buf integer?
---@return stepwise.Folder?
function M.find(buf)
  buf = buf or api.nvim_get_current_buf()
  local name = api.nvim_buf_get_name(buf)
  return own(buf)
    or (is_file(name) and in_view_of(util.normalize(name)) or nil)
    or state.get(plan.workspace())
    or in_view_of(util.normalize(vim.fn.getcwd()))
end

return M
