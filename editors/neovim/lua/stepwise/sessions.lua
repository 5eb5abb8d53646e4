-- Sessions side by side: a folder's sessions as the server keeps them (asked with `stepwise.sessions` once the
-- server serves the folder, after a restart too; `stepwise/sessions` whenever the list changes), and the commands:
-- `:Stepwise sessions` (a picker that switches the session in view: its chat, its plan, its review signs),
-- `:Stepwise new [worktree] [title]`, `:Stepwise apply [session]` (a worktree session's changes brought into the
-- folder, then their review), `:Stepwise close [session]` and `:Stepwise discard [session]` (asks first when the
-- worktree holds changes not applied).
local M = {}

local util = require('stepwise.util')
local state = require('stepwise.state')
local events = require('stepwise.events')
local execute = require('stepwise.execute').execute
local plan = require('stepwise.plan')
local chat = require('stepwise.chat')
local review = require('stepwise.review')

local function str(v)
  return type(v) == 'string' and v ~= '' and v or nil
end

--- What the User event `StepwiseSessions` carries of a session.
local function info(s)
  local main = state.main(s)
  return {
    session = s.session,
    title = s.title,
    state = s.closed and 'closed' or s.state,
    worktree = s.worktree,
    branch = s.branch,
    unapplied = s.unapplied,
    inView = main.view == s.session,
  }
end

--- Takes a folder's list (`stepwise.sessions`' answer, `stepwise/sessions`' params): each session's title,
--- state, worktree, what is not applied; a session listed before and not any more was discarded.
---@param uri string
---@param list table[]
function M.take(uri, list)
  local main = state.ensure(uri)
  local before = state.sessions(uri)
  local order, listed = {}, {}
  for _, e in ipairs(type(list) == 'table' and list or {}) do
    if type(e) == 'table' and str(e.session) then
      local s = state.session(uri, e.session)
      listed[s.key] = true
      order[#order + 1] = s.session
      s.title = str(e.title) or s.title
      s.worktree = str(e.worktree) and util.normalize(e.worktree) or nil
      s.branch, s.progress = str(e.branch), str(e.progress)
      s.unapplied = tonumber(e.unapplied)
      s.closed = e.state == 'closed'
      s.state = (e.state == 'running' or e.state == 'waiting') and e.state or 'idle'
    end
  end
  main.order = order
  for _, s in ipairs(before) do
    if s ~= main and not listed[s.key] then
      state.drop(s)
      main.view = main.view == s.session and state.MAIN or main.view
    end
  end
  events.emit('sessions', { workspace = uri })
  util.emit('StepwiseSessions', { workspace = uri, sessions = vim.tbl_map(info, state.sessions(uri)) })
  pcall(vim.cmd.redrawstatus)
end

--- `stepwise/sessions`.
function M.on_sessions(_, params)
  if type(params) == 'table' and type(params.workspace) == 'string' then
    M.take(params.workspace, params.sessions)
  end
end

--- Asks the server for a folder's sessions; `cb()` once they are taken (also after an error).
---@param folder stepwise.Folder
---@param cb fun()?
function M.refresh(folder, cb)
  local main = state.main(folder)
  execute(main, 'stepwise.sessions', nil, function(err, result)
    if not err and type(result) == 'table' then
      M.take(main.uri, result.sessions)
    end
    if cb then
      cb()
    end
  end, true)
end

-- What the server keeps of a folder it starts to serve (a restart of Neovim or of the server included).
events.on('folder', function(d)
  M.refresh(state.ensure(d.workspace))
end)

--- A session in one line: `▸ Fix tests — running · 1/3 · worktree stepwise/s1 · 2 not applied`.
---@param s stepwise.Folder
---@return string
function M.describe(s)
  local p = s.plan
  local progress = (p and (tonumber(p.total) or 0) > 0) and string.format('%d/%d', p.completed or 0, p.total) or s.progress
  local parts = { s.closed and 'closed' or s.state or 'idle' }
  if progress then
    parts[#parts + 1] = progress
  end
  if s.worktree then
    parts[#parts + 1] = 'worktree ' .. (s.branch or s.worktree)
  end
  if (s.unapplied or 0) > 0 then
    parts[#parts + 1] = string.format('%d not applied', s.unapplied)
  end
  local mark = state.main(s).view == s.session and '▸ ' or '  '
  return mark .. (s.title or s.session) .. ' — ' .. table.concat(parts, ' · ')
end

--- Puts a session in view: its chat shows (in the window of the folder's other chat, if one shows), the plan
--- window follows it, the review signs are its.
---@param s stepwise.Folder
function M.switch(s)
  local main = state.main(s)
  main.view = s.session
  if plan.is_open() then
    plan.open(s)
  end
  review.refresh_signs()
  chat.open(s)
  util.emit('StepwiseSessionView', { workspace = s.uri, session = s.session })
  pcall(vim.cmd.redrawstatus)
end

--- `:Stepwise sessions`: the folder's sessions, freshly listed, in a picker; the one chosen comes in view.
---@param folder stepwise.Folder
function M.pick(folder)
  M.refresh(folder, function()
    local list = state.sessions(folder.uri)
    vim.ui.select(list, { prompt = 'stepwise sessions of ' .. vim.fs.basename(folder.path), kind = 'stepwise_sessions', format_item = M.describe }, function(s)
      if s then
        M.switch(s)
      end
    end)
  end)
end

--- `:Stepwise new [worktree] [title]`: a new session of the folder, in view at once.
---@param folder stepwise.Folder
---@param opts {worktree: boolean?, title: string?}
function M.new(folder, opts)
  local main = state.main(folder)
  if opts.worktree then
    util.notify('making a worktree for the new session…')
  end
  execute(main, 'stepwise.newSession', { title = str(opts.title), worktree = opts.worktree or nil }, function(err, r)
    if err or type(r) ~= 'table' or not str(r.session) then
      return
    end
    local s = state.session(main.uri, r.session)
    if not vim.tbl_contains(main.order, s.session) then
      main.order[#main.order + 1] = s.session -- listed before the server's list says so
    end
    s.title = s.title or str(opts.title)
    s.worktree = str(r.worktree) and util.normalize(r.worktree) or s.worktree
    s.branch = str(r.branch) or s.branch
    M.switch(s)
    util.notify('new session ' .. (s.title or s.session) .. (s.worktree and (' in a worktree: ' .. s.worktree .. (s.branch and (' (' .. s.branch .. ')') or '')) or ''))
  end)
end

--- The session a command names (its id or its title), else the current buffer's (`folder`).
---@return stepwise.Folder?
local function named(folder, name)
  if not name then
    return folder
  end
  for _, s in ipairs(state.sessions(folder.uri)) do
    if s.session == name or s.title == name then
      return s
    end
  end
  util.notify('no session ' .. name .. ' in ' .. vim.fs.basename(folder.path) .. ' (:Stepwise sessions lists them)', vim.log.levels.ERROR)
end

--- `:Stepwise apply [session]`: a worktree session's changes brought into the folder as a run of the folder's own
--- session; the files it could not carry (changed in the folder since) are said, and the review of that run opens.
---@param folder stepwise.Folder
---@param name string?
function M.apply(folder, name)
  local s = named(folder, name)
  if not s then
    return
  elseif not s.worktree then
    return util.notify('session ' .. (s.title or s.session) .. ' has no worktree: its changes are in the folder already', vim.log.levels.ERROR)
  end
  local main = state.main(s)
  execute(main, 'stepwise.applySession', { session = s.session }, function(err, r)
    if err or type(r) ~= 'table' then
      return
    end
    local applied = type(r.applied) == 'table' and r.applied or {}
    local conflicts = type(r.conflicts) == 'table' and r.conflicts or {}
    util.notify(string.format('applied %d file%s of session %s', #applied, #applied == 1 and '' or 's', s.title or s.session))
    if #conflicts > 0 then
      util.notify('not applied, changed in the folder since the session began: ' .. table.concat(conflicts, ', '), vim.log.levels.WARN)
    end
    util.emit('StepwiseSessionApplied', { workspace = s.uri, session = s.session, result = r })
    if #applied > 0 then
      review.open(main, nil, nil, str(r.runId))
    end
  end)
end

--- `:Stepwise close [session]` / `:Stepwise discard [session]`: the session's run cancelled and its state kept
--- (a command naming it opens it again), or with `discard` forgotten with its worktree, after asking when the
--- worktree holds changes not applied. The folder's own session comes in view where the closed one was.
---@param folder stepwise.Folder
---@param name string?
---@param discard boolean
function M.close(folder, name, discard)
  local s = named(folder, name)
  if not s then
    return
  elseif s.session == state.MAIN then
    return util.notify("the folder's own session cannot be closed (:Stepwise reset starts it anew)", vim.log.levels.ERROR)
  end
  local main = state.main(s)
  M.refresh(main, function()
    local n = discard and tonumber(s.unapplied) or 0
    if n > 0 then
      local q = string.format('Discard session %s? Its worktree has %d file%s changed and not applied; they will be lost.', s.title or s.session, n, n == 1 and '' or 's')
      if vim.fn.confirm(q, '&Discard\n&Keep', 2) ~= 1 then
        return util.notify('session ' .. (s.title or s.session) .. ' kept')
      end
    end
    execute(main, 'stepwise.closeSession', { session = s.session, discard = discard or nil }, function(err)
      if err then
        return
      end
      if main.view == s.session then
        main.view = state.MAIN
        local ch = chat.find(s)
        if ch and #vim.fn.win_findbuf(ch.buf) > 0 then
          chat.open(main)
        end
      end
      if discard then
        chat.close(s)
        state.drop(s)
      end
      util.notify((discard and 'discarded session ' or 'closed session ') .. (s.title or s.session))
      util.emit('StepwiseSessionClosed', { workspace = s.uri, session = s.session, discard = discard })
    end)
  end)
end

--- `:Stepwise sessions | new [worktree] [title] | apply [session] | close [session] | discard [session]`.
---@param folder stepwise.Folder the session of the current buffer
---@param fargs string[]
function M.command(folder, fargs)
  local sub = fargs[1]
  if sub == 'sessions' then
    return M.pick(folder)
  elseif sub == 'new' then
    local worktree = fargs[2] == 'worktree'
    local title = table.concat(vim.list_slice(fargs, worktree and 3 or 2), ' ')
    return M.new(folder, { worktree = worktree, title = title })
  elseif sub == 'apply' then
    return M.apply(folder, fargs[2])
  end
  return M.close(folder, fargs[2], sub == 'discard')
end

--- Completion of `:Stepwise new` (`worktree`) and of the session `apply`, `close` and `discard` take (ids).
---@param folder stepwise.Folder
---@param sub string
---@return string[]
function M.complete(folder, sub)
  if sub == 'new' then
    return { 'worktree' }
  end
  local out = {}
  for _, s in ipairs(state.sessions(folder.uri)) do
    if s.session ~= state.MAIN and (sub ~= 'apply' or s.worktree) then
      out[#out + 1] = s.session
    end
  end
  return out
end

return M
