-- Options of stepwise.nvim: defaults, validation and the server settings derived from them.
local M = {}

---@class stepwise.Keymaps
---@field run string|false
---@field cancel string|false
---@field plan string|false
---@field log string|false
---@field reset string|false

M.defaults = {
  -- how to start the sidecar; nil: the server built in this plugin's checkout (target/release, then
  -- target/debug), else `stepwise` on $PATH (see M.cmd)
  cmd = nil, ---@type string[]?
  cmd_env = nil, ---@type table<string,string>?
  -- server settings (sent as initializationOptions and as the `stepwise` section of workspace/configuration)
  provider = nil, ---@type 'anthropic'|'openai'|nil
  model = nil, ---@type string?
  base_url = nil, ---@type string?
  api_key_env = nil, ---@type string? name of the variable holding the key (never the key itself)
  approval = nil, ---@type 'ask'|'auto'|'deny'|nil
  sandbox = nil, ---@type 'workspace-write'|'read-only'|'off'|nil shell commands in an OS sandbox (default on)
  sandbox_network = nil, ---@type 'off'|'on'|nil whether sandboxed commands may use TCP
  sandbox_writable = nil, ---@type string[]? absolute folders sandboxed commands may write besides the workspace
  reminder_rounds = nil,
  max_rounds = nil,
  planning_style = nil,
  plan_first = nil, ---@type boolean? every run plans read-only first and waits for :Stepwise plan approve
  diagnostics = nil, ---@type 'auto'|'tool'|'off'|nil code intelligence: errors the agent's edits caused, and the tools
  -- MCP servers whose tools the agent may use, by name: { fs = { command = 'npx', args = { ... } } } or
  -- { docs = { type = 'http', url = 'https://...' } }; they join ~/.config/stepwise/mcp.json and the
  -- workspace's .mcp.json (started only once trusted)
  mcp_servers = nil, ---@type table<string,table>?
  settings = {}, -- any further server settings, camelCase, passed through as they are
  -- attaching
  autostart = true, -- attach to file buffers as they are read
  root_markers = { '.git' }, -- else the current directory
  -- UI
  keymaps = {
    run = '<leader>sr',
    cancel = '<leader>sc',
    plan = '<leader>sp',
    log = '<leader>sl',
    reset = false,
  },
  virtual_text = true, -- the in-progress step at the line the agent edits
  codelens = true, -- refresh the server's code lenses on every plan change
  write_unopened = true, -- write files the agent edited that were not loaded before the edit
  notify = {
    finished = vim.log.levels.INFO, -- run endings
    reminder = vim.log.levels.DEBUG, -- nag reminders
  },
  plan_window = {
    border = 'rounded',
    max_width = 80,
  },
}

M.options = vim.deepcopy(M.defaults)

--- Keys of the plugin options that map to server settings.
local server_keys = {
  provider = 'provider',
  model = 'model',
  base_url = 'baseUrl',
  api_key_env = 'apiKeyEnv',
  approval = 'approval',
  sandbox = 'sandbox',
  sandbox_network = 'sandboxNetwork',
  sandbox_writable = 'sandboxWritable',
  reminder_rounds = 'reminderRounds',
  max_rounds = 'maxRounds',
  planning_style = 'planningStyle',
  plan_first = 'planFirst',
  diagnostics = 'diagnostics',
  mcp_servers = 'mcpServers',
}

---@param opts table?
function M.set(opts)
  opts = opts or {}
  assert(type(opts) == 'table', 'stepwise: setup() takes a table')
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  -- lists and whole-table switches replace instead of merging
  if opts.cmd ~= nil then
    merged.cmd = opts.cmd
  end
  if opts.root_markers ~= nil then
    merged.root_markers = opts.root_markers
  end
  if opts.keymaps == false then
    merged.keymaps = false
  end
  if type(merged.cmd) == 'string' then
    merged.cmd = { merged.cmd, 'lsp' }
  end
  assert(merged.cmd == nil or (type(merged.cmd) == 'table' and #merged.cmd > 0), 'stepwise: cmd must be a list')
  if merged.approval ~= nil then
    assert(
      vim.tbl_contains({ 'ask', 'auto', 'deny' }, merged.approval),
      "stepwise: approval must be 'ask', 'auto' or 'deny'"
    )
  end
  if merged.sandbox ~= nil then
    assert(
      vim.tbl_contains({ 'workspace-write', 'read-only', 'off' }, merged.sandbox),
      "stepwise: sandbox must be 'workspace-write', 'read-only' or 'off'"
    )
  end
  if merged.sandbox_network ~= nil then
    assert(vim.tbl_contains({ 'off', 'on' }, merged.sandbox_network), "stepwise: sandbox_network must be 'off' or 'on'")
  end
  if merged.sandbox_writable ~= nil then
    assert(type(merged.sandbox_writable) == 'table', 'stepwise: sandbox_writable must be a list of absolute paths')
    for _, p in ipairs(merged.sandbox_writable) do
      assert(type(p) == 'string' and p:sub(1, 1) == '/', 'stepwise: sandbox_writable must be a list of absolute paths')
    end
  end
  if opts.mcp_servers ~= nil then
    assert(type(opts.mcp_servers) == 'table', 'stepwise: mcp_servers must be a table of servers by name')
    merged.mcp_servers = opts.mcp_servers
  end
  if merged.provider ~= nil then
    assert(
      vim.tbl_contains({ 'anthropic', 'openai' }, merged.provider),
      "stepwise: provider must be 'anthropic' or 'openai'"
    )
  end
  M.options = merged
  return merged
end

function M.get()
  return M.options
end

--- The repository checkout this plugin lives in (editors/neovim/lua/stepwise/config.lua → the root).
M.checkout = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h:h:h')

--- The server a checkout built: target/release/stepwise (what `cargo build --release -p stepwise`, the
--- lazy.nvim build step, makes), then target/debug/stepwise; nil when neither is there.
---@param root string? the checkout (default: this plugin's)
---@return string?
function M.checkout_server(root)
  root = root or M.checkout
  for _, profile in ipairs({ 'release', 'debug' }) do
    local exe = root .. '/target/' .. profile .. '/stepwise'
    if vim.fn.executable(exe) == 1 then
      return exe
    end
  end
end

--- The command that starts the sidecar: `cmd` from setup(), else the checkout's server, else `stepwise`
--- on $PATH.
---@param opts table?
---@return string[]
function M.cmd(opts)
  opts = opts or M.options
  if opts.cmd then
    return opts.cmd
  end
  return { M.checkout_server() or 'stepwise', 'lsp' }
end

--- The settings the server reads (camelCase).
---@param opts table?
---@return table
function M.server_settings(opts)
  opts = opts or M.options
  local s = vim.deepcopy(opts.settings or {})
  for k, v in pairs(server_keys) do
    if opts[k] ~= nil then
      s[v] = opts[k]
    end
  end
  -- an object on the wire even when empty (the server ignores a settings section that is not one)
  return next(s) == nil and vim.empty_dict() or s
end

return M
