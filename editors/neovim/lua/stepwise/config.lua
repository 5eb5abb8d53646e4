-- Options of stepwise.nvim: defaults, validation and the server settings derived from them.
local M = {}

---@class stepwise.Keymaps
---@field run string|false
---@field cancel string|false
---@field plan string|false
---@field log string|false
---@field reset string|false

M.defaults = {
  -- how to start the sidecar
  cmd = { 'stepwise', 'lsp' },
  cmd_env = nil, ---@type table<string,string>?
  -- server settings (sent as initializationOptions and as the `stepwise` section of workspace/configuration)
  provider = nil, ---@type 'anthropic'|'openai'|nil
  model = nil, ---@type string?
  base_url = nil, ---@type string?
  api_key_env = nil, ---@type string? name of the variable holding the key (never the key itself)
  approval = nil, ---@type 'ask'|'auto'|'deny'|nil
  reminder_rounds = nil,
  max_rounds = nil,
  planning_style = nil,
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
  reminder_rounds = 'reminderRounds',
  max_rounds = 'maxRounds',
  planning_style = 'planningStyle',
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
  assert(type(merged.cmd) == 'table' and #merged.cmd > 0, 'stepwise: cmd must be a list')
  if merged.approval ~= nil then
    assert(
      vim.tbl_contains({ 'ask', 'auto', 'deny' }, merged.approval),
      "stepwise: approval must be 'ask', 'auto' or 'deny'"
    )
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
  return s
end

return M
