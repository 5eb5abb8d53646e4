-- Review of what the agent changed (`:Stepwise review`): each changed file in diff mode against a read-only
-- scratch buffer with its text before the agent's first change (so `do`, `dp` and `]c` work per hunk),
-- `:Stepwise review keep|undo [path]` (stepwise.review), and the unreviewed hunks marked in the sign column
-- (the `stepwise/review` notification says which files, `stepwise.changes` gives their before text; the marks
-- are review_signs.lua's). Each session has its review; a worktree session's files are its worktree's.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local state = require('stepwise.state')
local events = require('stepwise.events')
local execute = require('stepwise.execute').execute
local signs = require('stepwise.review_signs')

M.scheme = 'stepwise://before/'
M.relative, M.place_signs, M.signs, M.refresh_signs = signs.relative, signs.place, signs.signs, signs.refresh_all

local function absolute(folder, rel)
  if rel:sub(1, 1) == '/' then
    return rel
  end
  return state.root(folder) .. '/' .. rel
end

--- The lines of a text as a buffer holds them (a final newline is the end of the last line).
---@param text string|nil
---@return string[]
function M.lines(text)
  if type(text) ~= 'string' or text == '' then
    return {}
  end
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    lines[#lines] = nil
  end
  return lines
end

--- stepwise/review: the files (and hunk counts) still unreviewed; their hunks are fetched, the signs follow.
---@param params table
function M.on_review(params)
  if type(params) ~= 'table' or type(params.workspace) ~= 'string' then
    return
  end
  local folder = state.of(params)
  local r = signs.of(folder.key)
  r.pending = {}
  for _, p in ipairs(type(params.pending) == 'table' and params.pending or {}) do
    if type(p.path) == 'string' then
      r.pending[M.relative(folder, p.path)] = tonumber(p.hunks) or 1
    end
  end
  folder.review_pending = r.pending
  local function done()
    signs.refresh(folder)
    util.emit('StepwiseReview', { workspace = folder.uri, session = folder.session, pending = r.pending })
  end
  if next(r.pending) == nil then
    r.files = {}
    return done()
  end
  execute(folder, 'stepwise.changes', nil, function(err, result)
    if not err then
      signs.take_changes(folder, result)
    end
    done()
  end, true)
end

-- ---------------------------------------------------------------------------
-- the diff view

local function before_buf_name(rel)
  return M.scheme .. rel
end

--- The scratch buffer with a file's before text (read-only).
local function before_buf(rel, text, filetype)
  local name = before_buf_name(rel)
  for _, old in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_get_name(old) == name then
      -- a review of the file opened before: this one has the text as it is now
      pcall(api.nvim_buf_delete, old, { force = true })
    end
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, name)
  api.nvim_buf_set_lines(buf, 0, -1, false, M.lines(text))
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].readonly = true
  if filetype and filetype ~= '' then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

--- Open one changed file in a new tab: the before text on the left, the file on the right, in diff mode.
---@param folder stepwise.Folder
---@param f table a file of stepwise.changes
---@return {tab: integer, before: integer, file: integer}
local function open_file(folder, f)
  local rel = M.relative(folder, f.path)
  vim.cmd('tabnew ' .. vim.fn.fnameescape(absolute(folder, rel)))
  local file_win = api.nvim_get_current_win()
  local file_buf = api.nvim_get_current_buf()
  local b = before_buf(rel, f.before ~= vim.NIL and f.before or nil, vim.bo[file_buf].filetype)
  vim.cmd('leftabove vsplit')
  local before_win = api.nvim_get_current_win()
  api.nvim_win_set_buf(before_win, b)
  for _, w in ipairs({ before_win, file_win }) do
    api.nvim_win_call(w, function()
      vim.cmd('diffthis')
    end)
  end
  api.nvim_set_current_win(file_win)
  pcall(vim.cmd, 'normal! gg]c')
  M.place_signs(file_buf)
  return { tab = api.nvim_get_current_tabpage(), before = b, file = file_buf }
end

--- `:Stepwise review [path]`: every unreviewed file the latest run changed (or `path`), a tab each.
---@param folder stepwise.Folder
---@param path string?
---@param cb fun(opened: table[])?
---@param run_id string? the run whose changes (default: the latest run that changed files)
function M.open(folder, path, cb, run_id)
  execute(folder, 'stepwise.changes', { runId = run_id }, function(err, result)
    if err then
      return
    end
    signs.take_changes(folder, result)
    local want = path and M.relative(folder, path)
    local opened = {}
    for _, f in ipairs(type(result) == 'table' and type(result.files) == 'table' and result.files or {}) do
      local rel = type(f.path) == 'string' and M.relative(folder, f.path)
      if rel and ((want and rel == want) or (not want and not f.reviewed)) then
        opened[#opened + 1] = open_file(folder, f)
      end
    end
    if #opened == 0 then
      util.notify(want and ('no change of the agent to review in ' .. want) or 'no change of the agent to review')
    elseif #opened > 1 then
      util.notify(string.format('%d files to review, a tab each (gt: next); :Stepwise review keep|undo in each', #opened))
      vim.cmd('tabnext ' .. api.nvim_tabpage_get_number(opened[1].tab))
    end
    util.emit('StepwiseReviewOpened', { workspace = folder.uri, session = folder.session, files = #opened })
    if cb then
      cb(opened)
    end
  end)
end

--- The path (relative) the current buffer reviews: its file, or the file of a before buffer.
---@param folder stepwise.Folder
---@param buf integer
---@return string?
function M.path_of(folder, buf)
  local name = api.nvim_buf_get_name(buf)
  if vim.startswith(name, M.scheme) then
    return name:sub(#M.scheme + 1)
  end
  if name == '' or name:find('://', 1, true) then
    return nil
  end
  return M.relative(folder, name)
end

--- The diff tab of a file closes its before buffer (the file stays, out of diff mode).
local function end_diff(rel)
  local name = before_buf_name(rel)
  for _, b in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_get_name(b) == name then
      for _, w in ipairs(vim.fn.win_findbuf(b)) do
        local tab = api.nvim_win_get_tabpage(w)
        for _, tw in ipairs(api.nvim_tabpage_list_wins(tab)) do
          if tw ~= w then
            api.nvim_win_call(tw, function()
              vim.cmd('diffoff')
            end)
          end
        end
      end
      pcall(api.nvim_buf_delete, b, { force = true })
    end
  end
end

--- The numbers of the hunks of `f` (a file of stepwise.changes) that touch lines [first, last] (1-based).
---@return integer[]
function M.hunks_in(f, first, last)
  local out = {}
  for _, h in ipairs(type(f) == 'table' and type(f.hunks) == 'table' and f.hunks or {}) do
    local from, to = tonumber(h.start), tonumber(h['end'])
    if from and to and tonumber(h.index) then
      to = math.max(to, from + 1) -- a hunk that only removed lines sits at its line
      if from < last and to > first - 1 then
        out[#out + 1] = tonumber(h.index)
      end
    end
  end
  return out
end

--- The hunks of `rel` touching lines `range`, numbered as the server numbers them now (the buffer's text is
--- the server's): fetched afresh, then given to `fn` (none on an error).
local function hunks_on_lines(folder, rel, range, fn)
  execute(folder, 'stepwise.changes', nil, function(err, result)
    if err then
      return
    end
    signs.take_changes(folder, result)
    fn(M.hunks_in(signs.of(folder.key).files[rel], range[1], range[2]))
  end)
end

--- `:[range]Stepwise review keep|undo [path]` (the current buffer's file when no path is given; with a
--- range, only the hunks touching those lines, numbered as the server numbers them right now).
---@param folder stepwise.Folder
---@param action 'keep'|'undo'
---@param path string?
---@param cb fun(err: any, result: any)?
---@param range {[1]: integer, [2]: integer}?
function M.act(folder, action, path, cb, range)
  local rel
  if path then
    -- a path relative to the current directory, else as the server names it (relative to the folder)
    local abs = util.normalize(path)
    rel = (util.is_under(abs, state.root(folder)) and vim.uv.fs_stat(abs)) and M.relative(folder, abs) or path
  else
    rel = M.path_of(folder, api.nvim_get_current_buf())
  end
  if not rel then
    util.notify(':Stepwise review ' .. action .. ': name a file (the current buffer is not one)', vim.log.levels.ERROR)
    return
  end
  local function send(hunks)
    local what = hunks and string.format('%d hunk%s of %s', #hunks, #hunks == 1 and '' or 's', rel) or rel
    execute(folder, 'stepwise.review', { path = rel, action = action, hunks = hunks }, function(err, result)
      if not err then
        local conflicts = type(result) == 'table' and type(result.conflicts) == 'table' and result.conflicts or {}
        local failed = type(result) == 'table' and type(result.failed) == 'table' and result.failed or {}
        if #conflicts > 0 then
          util.notify('left alone, changed since by someone else: ' .. table.concat(conflicts, ', '), vim.log.levels.WARN)
        elseif #failed > 0 then
          util.notify(action .. ' failed: ' .. tostring(failed[1].path) .. ': ' .. tostring(failed[1].reason), vim.log.levels.ERROR)
        else
          if not hunks then
            end_diff(rel)
          end
          util.notify((action == 'keep' and 'kept ' or 'undid the agent\'s changes: ') .. what)
        end
      end
      util.emit('StepwiseReviewed', { workspace = folder.uri, session = folder.session, path = rel, action = action, hunks = hunks, result = result })
      if cb then
        cb(err, result)
      end
    end)
  end
  if not range then
    return send(nil)
  end
  hunks_on_lines(folder, rel, range, function(hunks)
    if #hunks == 0 then
      util.notify(string.format('no change of the agent to %s in lines %d-%d', action, range[1], range[2]), vim.log.levels.WARN)
      return
    end
    send(hunks)
  end)
end

--- `:[range]Stepwise review comment {text}`: `text` about the current buffer's file (and the hunks on those
--- lines) goes to the agent as a steer (mid-run read at its next step, else it starts a run).
---@param folder stepwise.Folder
---@param text string
---@param range {[1]: integer, [2]: integer}?
---@param cb fun(err: any, result: any)?
function M.comment(folder, text, range, cb)
  local rel = M.path_of(folder, api.nvim_get_current_buf())
  if not rel or vim.trim(text or '') == '' then
    util.notify(':Stepwise review comment {text}, in a file the agent changed', vim.log.levels.ERROR)
    return
  end
  local function send(hunks)
    execute(folder, 'stepwise.review', { path = rel, action = 'comment', text = vim.trim(text), hunks = hunks }, function(err, result)
      if not err then
        util.notify('sent to the agent: your comment on ' .. rel)
      end
      util.emit('StepwiseReviewed', { workspace = folder.uri, session = folder.session, path = rel, action = 'comment', hunks = hunks, result = result })
      if cb then
        cb(err, result)
      end
    end)
  end
  if not range then
    return send(nil)
  end
  hunks_on_lines(folder, rel, range, function(hunks)
    send(#hunks > 0 and hunks or nil)
  end)
end

--- Completion of `:Stepwise review keep|undo {path}`: the files still unreviewed.
function M.complete(folder, arglead)
  local r = signs.of(folder.key)
  local out = {}
  for rel in pairs(r and r.pending or {}) do
    if rel:sub(1, #arglead) == arglead then
      out[#out + 1] = rel
    end
  end
  table.sort(out)
  return out
end

local did_setup = false
local group = api.nvim_create_augroup('stepwise.review', { clear = true })

--- Subscribe to stepwise/review and keep the signs up to date as buffers open and change.
function M.setup()
  if did_setup then
    return
  end
  did_setup = true
  events.on('review', M.on_review)
  api.nvim_create_autocmd('BufReadPost', {
    group = group,
    callback = function(ev)
      if signs.any() then
        M.place_signs(ev.buf)
      end
    end,
  })
end

return M
