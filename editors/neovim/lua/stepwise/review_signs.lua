-- What is left to review of each session (the files and hunk counts of `stepwise/review`, the hunks of
-- `stepwise.changes`) and its marks in the sign column of the files' buffers (`┃` on changed lines, `▁` where
-- lines went): a file's buffer shows the session in view's marks, else those of the folder's session that
-- changed it, else (a file of a worktree) the worktree session's.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')

local ns = api.nvim_create_namespace('stepwise.review')

---@class stepwise.ReviewFolder
---@field pending table<string, integer> relative path -> unreviewed hunks (stepwise/review)
---@field files table<string, table> relative path -> the file of stepwise.changes (before text, hunks)

---@type table<string, stepwise.ReviewFolder> by session key (state.key)
local folders = {}

--- The review of a session (made on first use).
---@param key string
---@return stepwise.ReviewFolder
function M.of(key)
  folders[key] = folders[key] or { pending = {}, files = {} }
  return folders[key]
end

--- Whether any session has a review (else no buffer needs signs).
function M.any()
  return next(folders) ~= nil
end

--- A path as the server names it (relative to the session's root: the folder, or its worktree) from an
--- absolute or relative one.
---@param folder stepwise.Folder
---@param path string
---@return string
function M.relative(folder, path)
  if path:sub(1, 1) ~= '/' then
    return path
  end
  local p, root = util.normalize(path), state.root(folder)
  if util.is_under(p, root) and p ~= root then
    return p:sub(#root + 2)
  end
  return p
end

--- The review of a file's buffer: the session in view's, else another session's of the folder that changed it
--- (in the folder itself), else that of the worktree session holding the file. Returns the session and its review.
---@return stepwise.Folder?, stepwise.ReviewFolder?
local function review_of(name)
  local found = state.containing(util.normalize(name))
  if not found then
    return nil
  end
  local candidates = { found }
  if found.session == state.MAIN then
    candidates = { state.in_view(found) }
    vim.list_extend(candidates, state.sessions(found.uri))
  end
  for _, s in ipairs(candidates) do
    local r = folders[s.key]
    if r and not (s.worktree and s ~= found) and r.pending[M.relative(s, name)] then
      return s, r
    end
  end
end

--- Mark the unreviewed hunks of a loaded buffer (the server's hunks: lines [start, end) of the text now;
--- a hunk that only removed lines marks the line it was removed at). The marks move with later edits,
--- and are placed anew at each stepwise/review.
---@param buf integer
function M.place(buf)
  if not api.nvim_buf_is_loaded(buf) then
    return
  end
  api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local name = api.nvim_buf_get_name(buf)
  if name == '' or name:find('://', 1, true) then
    return
  end
  local folder, r = review_of(name)
  local f = r and r.files[M.relative(folder, name)]
  if not f then
    return
  end
  local n = api.nvim_buf_line_count(buf)
  for _, h in ipairs(type(f.hunks) == 'table' and f.hunks or {}) do
    local from, to = tonumber(h.start), tonumber(h['end'])
    if not h.reviewed and from and to then
      if to > from then
        for row = from, math.min(to, n) - 1 do
          api.nvim_buf_set_extmark(buf, ns, row, 0, { sign_text = '┃', sign_hl_group = 'StepwiseReviewSign' })
        end
      else
        local row = math.max(math.min(from, n - 1), 0)
        api.nvim_buf_set_extmark(buf, ns, row, 0, { sign_text = '▁', sign_hl_group = 'StepwiseReviewDelete' })
      end
    end
  end
end

--- The review signs of a buffer as {row (0-based), text}, for tests and statuslines.
---@param buf integer
function M.signs(buf)
  local out = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    out[#out + 1] = { m[2], vim.trim(m[4].sign_text or '') }
  end
  return out
end

--- Place the signs of the loaded buffers under a session's root again.
function M.refresh(folder)
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(b) then
      local name = api.nvim_buf_get_name(b)
      if name ~= '' and not name:find('://', 1, true) and util.is_under(util.normalize(name), state.root(folder)) then
        M.place(b)
      end
    end
  end
end

--- Place the signs of every loaded buffer again (the session in view changed).
function M.refresh_all()
  for _, b in ipairs(api.nvim_list_bufs()) do
    M.place(b)
  end
end

--- Keep a session's changes (a stepwise.changes result).
function M.take_changes(folder, result)
  local r = M.of(folder.key)
  r.files = {}
  for _, f in ipairs(type(result) == 'table' and type(result.files) == 'table' and result.files or {}) do
    if type(f.path) == 'string' then
      r.files[M.relative(folder, f.path)] = f
    end
  end
end

return M
