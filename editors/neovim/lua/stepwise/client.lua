-- The single `stepwise lsp` client of this Neovim instance: starting it, workspace folders, attaching buffers.
-- The handlers of the server's notifications and requests (handlers.lua, above this module) are handed in
-- with use_handlers() by whoever loads the plugin (init.lua, lsp/stepwise.lua), so this module requires none
-- of them and they may require it.
local M = {}

local api = vim.api
local util = require('stepwise.util')
local config = require('stepwise.config')
local state = require('stepwise.state')
local marks = require('stepwise.marks')
local events = require('stepwise.events')

M.name = 'stepwise'

local client_id ---@type integer?
-- per client id: actions waiting for initialization, and folders found while it initializes
local pending = {} ---@type table<integer, fun(client: vim.lsp.Client)[]>
local pending_folders = {} ---@type table<integer, lsp.WorkspaceFolder[]>

--- The running client, if any.
---@return vim.lsp.Client?
function M.get()
  if client_id then
    local c = vim.lsp.get_client_by_id(client_id)
    if c and not util.is_stopped(c) then
      return c
    end
    client_id = nil
  end
  for _, c in ipairs(vim.lsp.get_clients({ name = M.name })) do
    if not util.is_stopped(c) then
      client_id = c.id
      return c
    end
  end
end

--- The folder's session a notification is about (its `workspace` and `session`), else the client's first folder.
---@param params table?
---@return stepwise.Folder?
function M.folder_of(params)
  local uri = params and params.workspace
  if type(uri) ~= 'string' then
    local c = M.get()
    local wf = c and c.workspace_folders and c.workspace_folders[1]
    uri = wf and wf.uri
  end
  if not uri then
    return nil
  end
  return state.session(uri, params and params.session)
end

-- ---------------------------------------------------------------------------
-- folders

--- The workspace folder root of a path: the nearest directory with a root marker, else the
--- current directory (when the path is inside it).
---@param path string
---@return string?
function M.root_for_path(path)
  path = util.normalize(path)
  local markers = config.get().root_markers or { '.git' }
  local root
  if #markers > 0 then
    root = vim.fs.root(path, markers)
  end
  if root then
    return util.normalize(root)
  end
  local cwd = util.normalize(vim.fn.getcwd())
  if util.is_under(path, cwd) then
    return cwd
  end
end

--- The root for a buffer, or nil when the buffer is not a file the plugin serves.
---@param buf integer
---@return string?
function M.root_for_buf(buf)
  if not api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' or name:find('://', 1, true) then
    return nil
  end
  -- a file of a session's worktree is that session's, not a folder of its own
  if state.worktree_session(util.normalize(name)) then
    return nil
  end
  local opts = config.get()
  if opts.should_attach and not opts.should_attach(buf) then
    return nil
  end
  return M.root_for_path(name)
end

---@param root string
---@return lsp.WorkspaceFolder
local function workspace_folder(root)
  return { uri = vim.uri_from_fname(root), name = root }
end

--- The folder state of a root, created on first use.
---@param root string
---@return stepwise.Folder
function M.folder_for_root(root)
  local wf = workspace_folder(root)
  return state.ensure(wf.uri, root)
end

local function has_folder(client, uri)
  for _, f in ipairs(client.workspace_folders or {}) do
    if f.uri == uri then
      return true
    end
  end
  for _, f in ipairs(pending_folders[client.id] or {}) do
    if f.uri == uri then
      return true
    end
  end
  return false
end

--- Add a workspace folder to the client (workspace/didChangeWorkspaceFolders).
---@param client vim.lsp.Client
---@param root string
function M.add_folder(client, root)
  local wf = workspace_folder(root)
  state.ensure(wf.uri, root)
  if has_folder(client, wf.uri) then
    return
  end
  if not client.initialized then
    pending_folders[client.id] = pending_folders[client.id] or {}
    table.insert(pending_folders[client.id], wf)
    return
  end
  util.notify_server(client, 'workspace/didChangeWorkspaceFolders', {
    event = { added = { wf }, removed = {} },
  })
  client.workspace_folders = client.workspace_folders or {}
  table.insert(client.workspace_folders, wf)
  events.emit('folder', { workspace = wf.uri })
end

-- ---------------------------------------------------------------------------
-- the client configuration

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = vim.tbl_deep_extend('force', caps.experimental or {}, {
    stepwise = { saveDocuments = true, ask = true, query = true },
  })
  caps.workspace = caps.workspace or {}
  caps.workspace.applyEdit = true
  caps.workspace.workspaceFolders = true
  caps.workspace.configuration = true
  caps.workspace.codeLens = { refreshSupport = true }
  caps.workspace.workspaceEdit = vim.tbl_deep_extend('force', caps.workspace.workspaceEdit or {}, {
    documentChanges = true,
    resourceOperations = { 'create', 'rename', 'delete' },
  })
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  return caps
end

local function on_init(client)
  client_id = client.id
  -- what the server keeps of each folder (its sessions) is asked for once it serves the folder
  for _, wf in ipairs(client.workspace_folders or {}) do
    events.emit('folder', { workspace = wf.uri })
  end
  local folders = pending_folders[client.id] or {}
  pending_folders[client.id] = nil
  for _, wf in ipairs(folders) do
    if not has_folder(client, wf.uri) then
      util.notify_server(client, 'workspace/didChangeWorkspaceFolders', {
        event = { added = { wf }, removed = {} },
      })
      client.workspace_folders = client.workspace_folders or {}
      table.insert(client.workspace_folders, wf)
      events.emit('folder', { workspace = wf.uri })
    end
  end
  local actions = pending[client.id] or {}
  pending[client.id] = nil
  for _, fn in ipairs(actions) do
    local ok, err = pcall(fn, client)
    if not ok then
      util.notify(tostring(err), vim.log.levels.ERROR)
    end
  end
end

local stopping = {} ---@type table<integer, true> clients stopped on purpose

local function on_exit(code, signal, id)
  pending[id] = nil
  pending_folders[id] = nil
  local expected = stopping[id]
  stopping[id] = nil
  vim.schedule(function()
    if code ~= 0 and not expected then
      util.notify(
        string.format('the server exited (code %s, signal %s); see :LspLog', code, signal),
        vim.log.levels.WARN
      )
    end
    if client_id ~= nil and client_id ~= id then
      return -- an older client; a new one runs
    end
    client_id = nil
    for _, f in ipairs(state.all()) do
      marks.clear(f)
      f.state = 'idle'
      f.mcp = nil -- a new server starts its MCP servers again at the folder's next run
    end
  end)
end

local handlers_fn ---@type (fun(): table<string, function>)?

--- Hand in the handlers of the server's messages (a function giving the table, called at each start).
---@param fn fun(): table<string, function>
function M.use_handlers(fn)
  handlers_fn = fn
end

--- What every start of the client has, the plugin's own (make_config) and vim.lsp.enable's (lsp_config).
local function base_config()
  local opts = config.get()
  local settings = config.server_settings(opts)
  return {
    name = M.name,
    cmd = config.cmd(opts),
    cmd_env = opts.cmd_env,
    init_options = settings,
    settings = { stepwise = settings },
    capabilities = capabilities(),
    handlers = handlers_fn and handlers_fn() or error('stepwise: the client has no handlers: the plugin was not loaded'),
    on_init = on_init,
    on_exit = on_exit,
  }
end

---@param root string
local function make_config(root)
  return vim.tbl_extend('force', base_config(), { root_dir = root, workspace_folders = { workspace_folder(root) } })
end

--- Reuse the one client whatever the buffer, adding the buffer's root as a workspace folder.
local function reuse_client(client, cfg)
  if client.name ~= M.name or util.is_stopped(client) then
    return false
  end
  if cfg.root_dir then
    M.add_folder(client, cfg.root_dir)
  end
  return true
end

--- Attach a buffer (starting the client on first use); nil when the buffer is not served.
---@param buf integer
---@return integer? client id
function M.attach(buf)
  local root = M.root_for_buf(buf)
  if not root then
    return nil
  end
  if not M.get() and not M.executable() then
    return nil
  end
  M.folder_for_root(root)
  local id = vim.lsp.start(make_config(root), { bufnr = buf, reuse_client = reuse_client, silent = false })
  if id then
    client_id = id
  end
  return id
end

--- Whether the server command can be run (warns once when it cannot).
function M.executable()
  local exe = config.cmd()[1]
  if vim.fn.executable(exe) == 1 then
    return true
  end
  vim.notify_once(
    string.format('stepwise: `%s` not found; build it (cargo build --release -p stepwise in the checkout) or set cmd in setup(). See :checkhealth stepwise', exe),
    vim.log.levels.WARN
  )
  return false
end

--- Ensure the client runs and serves `root`; call `fn(client)` once it is initialized.
---@param root string
---@param fn fun(client: vim.lsp.Client)?
function M.with_client(root, fn)
  M.folder_for_root(root)
  local client = M.get()
  if client then
    M.add_folder(client, root)
  else
    if not M.executable() then
      return
    end
    local id = vim.lsp.start(make_config(root), { attach = false, reuse_client = reuse_client })
    if not id then
      util.notify('could not start ' .. table.concat(config.cmd(), ' '), vim.log.levels.ERROR)
      return
    end
    client_id = id
    client = vim.lsp.get_client_by_id(id)
  end
  if not fn then
    return
  end
  if client and client.initialized then
    fn(client)
  elseif client then
    pending[client.id] = pending[client.id] or {}
    table.insert(pending[client.id], fn)
  end
end

--- The configuration for Neovim 0.11's `vim.lsp.config` / `vim.lsp.enable('stepwise')` (lsp/stepwise.lua):
--- the same client as the plugin's own attaching, one for the whole instance, each buffer's root (nearest
--- root marker, else the current directory) added as a workspace folder.
---@return vim.lsp.Config
function M.lsp_config()
  return vim.tbl_extend('force', base_config(), {
    root_dir = function(buf, on_dir)
      local root = M.root_for_buf(buf)
      if root then
        M.folder_for_root(root)
        on_dir(root)
      end
    end,
    reuse_client = reuse_client,
  })
end

--- Send new settings to a running client.
function M.push_settings()
  local client = M.get()
  if not client then
    return
  end
  local settings = config.server_settings()
  client.settings = { stepwise = settings }
  if client.initialized then
    util.notify_server(client, 'workspace/didChangeConfiguration', { settings = { stepwise = settings } })
  end
end

--- Stop the client (and wait up to `timeout` ms for it to exit).
function M.stop(timeout)
  local client = M.get()
  if not client then
    return
  end
  stopping[client.id] = true
  util.stop(client)
  -- Until the process has exited, not only until its pipe is closing (is_stopped): the server saves the
  -- session and lets go of its checkpoints as it exits, and a server started next must find them final.
  local ok = vim.wait(timeout or 3000, function()
    return util.is_stopped(client) and vim.lsp.get_client_by_id(client.id) == nil
  end, 20)
  if not ok then
    util.stop(client, true)
  end
  client_id = nil
end

--- Number of workspace folders of the running client.
function M.folder_count()
  local c = M.get()
  return c and #(c.workspace_folders or {}) or 0
end

--- Buffers attached to the client that lie in a folder.
---@param folder stepwise.Folder?
---@return integer[]
function M.folder_buffers(folder)
  local client = M.get()
  if not client then
    return {}
  end
  local out = {}
  for b in pairs(client.attached_buffers or {}) do
    if api.nvim_buf_is_loaded(b) then
      local name = api.nvim_buf_get_name(b)
      if not folder or (name ~= '' and state.containing(util.normalize(name)) == folder) then
        out[#out + 1] = b
      end
    end
  end
  table.sort(out)
  return out
end

return M
