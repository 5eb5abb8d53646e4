-- Per-workspace-folder state, keyed by the folder uri exactly as the client sent it to the server, and per
-- session of a folder (sessions side by side): a session's state is a `stepwise.Folder` of its own (its plan,
-- run, jobs, review), keyed by `key(uri, session)`; the folder's own session (`main`) is the folder's entry.
local M = {}

--- The id of a folder's own session.
M.MAIN = 'main'

---@class stepwise.Folder
---@field uri string the workspace folder's uri (what the server calls `workspace`)
---@field path string
---@field name string
---@field session string the session's id (`main` for the folder's own)
---@field key string `uri` for the folder's own session, `uri#session` for another
---@field title string? the session's title (stepwise.sessions)
---@field worktree string? the session's worktree (its files live there, not in the folder)
---@field branch string? the worktree's branch
---@field unapplied integer? a worktree session's files changed and not applied yet
---@field progress string? `c/t` of the session's plan, as the list says it
---@field closed boolean? listed as closed (a command naming it opens it again)
---@field view string? (the folder's own entry) the id of the session in view
---@field order string[]? (the folder's own entry) the sessions' ids as the server lists them
---@field acting string? (the folder's own entry) the session whose tool call started last (its edits follow)
---@field plan table? last stepwise/plan params
---@field state string 'idle'|'running'|'waiting'
---@field run_id string?
---@field reason string? reason of the last idle
---@field prompt string? prompt of the current or last run
---@field prompt_pending string? prompt of a run started by a command, until its status comes (the chat shows it)
---@field mark table? {buf, id} extmark of the step virtual text
---@field step string? the plan step of the tool call in flight (from stepwise/toolCall)
---@field mcp stepwise.McpServer[]? the folder's MCP servers (stepwise/mcp)
---@field jobs stepwise.Job[]? the session's background tasks (stepwise/background, jobs.lua)
---@field subagents table<string, table>? the session's children (`task`) running, by id (subagents.lua)

---@type table<string, stepwise.Folder> the folders' own sessions, by folder uri
M.folders = {}
---@type table<string, stepwise.Folder> the other sessions, by key
local others = {}

--- The key of a folder's session (`uri` for its own).
---@param uri string
---@param session string?
---@return string
function M.key(uri, session)
  if session == nil or session == vim.NIL or session == M.MAIN then
    return uri
  end
  return uri .. '#' .. tostring(session)
end

---@param uri string
---@param path string?
---@return stepwise.Folder
function M.ensure(uri, path)
  local f = M.folders[uri]
  if not f then
    path = path or vim.uri_to_fname(uri)
    f = {
      uri = uri,
      path = path,
      name = path,
      session = M.MAIN,
      key = uri,
      state = 'idle',
      view = M.MAIN,
      order = { M.MAIN },
    }
    M.folders[uri] = f
  end
  return f
end

--- A session of a folder (made on first use; the folder's own for `main` or none).
---@param uri string
---@param session string?
---@return stepwise.Folder
function M.session(uri, session)
  local key = M.key(uri, session)
  local main = M.ensure(uri)
  if key == uri then
    return main
  end
  local s = others[key]
  if not s then
    s = { uri = uri, path = main.path, name = main.name, session = tostring(session), key = key, state = 'idle' }
    others[key] = s
  end
  return s
end

--- The session a notification or a command's params are about (`workspace`, `session`).
---@param params table
---@return stepwise.Folder
function M.of(params)
  return M.session(params.workspace, params.session)
end

--- A session by key (a folder uri is its own session's key); nil when unknown.
---@param key string?
---@return stepwise.Folder?
function M.get(key)
  return key and (M.folders[key] or others[key]) or nil
end

--- Forget a session (discarded); the folder's own stays.
---@param s stepwise.Folder
function M.drop(s)
  if s.key ~= s.uri then
    others[s.key] = nil
  end
end

--- The folder's own session of any of its sessions.
---@param s stepwise.Folder
---@return stepwise.Folder
function M.main(s)
  return M.ensure(s.uri)
end

--- The session of a folder in view (`:Stepwise sessions` switches it).
---@param folder stepwise.Folder
---@return stepwise.Folder
function M.in_view(folder)
  local main = M.main(folder)
  return main.view and main.view ~= M.MAIN and others[M.key(main.uri, main.view)] or main
end

--- The sessions of a folder: its own first, then the others in the order the server lists them (one a
--- notification named before any list did is routed to, but not listed here until a list names it).
---@param uri string
---@return stepwise.Folder[]
function M.sessions(uri)
  local main = M.ensure(uri)
  local out, seen = { main }, { [uri] = true }
  for _, id in ipairs(main.order or {}) do
    local s = others[M.key(uri, id)]
    if s and not seen[s.key] then
      seen[s.key] = true
      out[#out + 1] = s
    end
  end
  return out
end

--- Every session of every folder, listed or not.
---@return stepwise.Folder[]
function M.all()
  local out = vim.tbl_values(M.folders)
  vim.list_extend(out, vim.tbl_values(others))
  return out
end

--- The root a session's files live under: its worktree, else the folder.
---@param s stepwise.Folder
---@return string
function M.root(s)
  return s.worktree or s.path
end

--- What a session is called: the folder's name, then the session's title unless it is the folder's own.
---@param s stepwise.Folder
---@return string
function M.label(s)
  local name = vim.fs.basename(s.path or '')
  if s.session and s.session ~= M.MAIN then
    name = name .. ' · ' .. (s.title or s.session)
  end
  return name
end

--- The session whose worktree holds a path, if any.
---@param path string normalized absolute path
---@return stepwise.Folder?
function M.worktree_session(path)
  local util = require('stepwise.util')
  for _, s in pairs(others) do
    if s.worktree and util.is_under(path, s.worktree) then
      return s
    end
  end
end

--- The folder that contains a path (the deepest one), or the session whose worktree holds it.
---@param path string normalized absolute path
---@return stepwise.Folder?
function M.containing(path)
  local util = require('stepwise.util')
  local best
  for _, f in pairs(M.folders) do
    if util.is_under(path, f.path) and (not best or #f.path > #best.path) then
      best = f
    end
  end
  local tree = M.worktree_session(path)
  if tree and (not best or #tree.worktree > #best.path) then
    return tree
  end
  return best
end

function M.clear()
  M.folders = {}
  others = {}
end

return M
