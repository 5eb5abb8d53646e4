-- :checkhealth stepwise. The configuration is the server's own report (`stepwise doctor --json`): the same
-- code reads the environment, the .env files and the settings as a run does, so what is shown here is what
-- a run will use.
local M = {}

local health = vim.health

--- Runs `stepwise doctor --json` for `root` with the plugin's settings and environment.
---@return table? report, string? error
function M.doctor(exe, root, opts)
  local config = require('stepwise.config')
  -- Neovim's own language servers answer the agent (`stepwise/query`): doctor starts none of stepwise's.
  local args = { exe, 'doctor', '--json', '--workspace', root, '--settings', vim.json.encode(config.server_settings(opts)), '--no-language-servers' }
  local ok, res = pcall(function()
    return vim.system(args, { text = true, cwd = root, env = opts.cmd_env }):wait(10000)
  end)
  if not ok then
    return nil, tostring(res)
  end
  local okj, report = pcall(vim.json.decode, res.stdout or '')
  if not okj or type(report) ~= 'table' then
    local err = vim.trim(res.stderr or '')
    return nil, string.format('`stepwise doctor` failed (exit %s): %s', res.code, err ~= '' and err or (res.stdout or ''))
  end
  return report
end

local function source(item)
  if item.source == 'file' then
    return 'from ' .. item.file
  end
  return ({ settings = 'setup()', environment = 'environment', default = 'default', unset = 'not set' })[item.source]
    or tostring(item.source)
end

function M.check()
  local config = require('stepwise.config')
  local opts = config.get()

  health.start('stepwise: Neovim')
  local v = vim.version()
  local vs = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. vs)
  else
    health.error('Neovim ' .. vs .. ': stepwise.nvim needs 0.11 or later')
  end
  if not require('stepwise')._did_setup then
    health.info("setup() has not been called (fine with vim.lsp.enable('stepwise'); setup() adds commands' keymaps and settings)")
  end

  health.start('stepwise: server binary')
  local cmd = config.cmd(opts)
  local exe = cmd[1]
  local path = vim.fn.exepath(exe)
  if path == '' then
    health.error(string.format('`%s` not found (cmd = %s)', exe, vim.inspect(cmd)), {
      'build it in the plugin checkout: cargo build --release -p stepwise (lazy.nvim: the build step does this)',
      "or put `stepwise` on $PATH, or point setup({ cmd = { '/path/to/stepwise', 'lsp' } }) at it",
    })
    return
  end
  local where = opts.cmd and 'setup({ cmd })' or (vim.startswith(path, config.checkout .. '/') and 'built in the checkout' or '$PATH')
  local okv, res = pcall(function()
    return vim.system({ path, '--version' }, { text = true }):wait(5000)
  end)
  if okv and res and res.code == 0 then
    health.ok(string.format('%s (%s): %s', path, where, vim.trim(res.stdout or '')))
  else
    health.error(string.format('%s --version failed: %s', path, okv and res and vim.trim(res.stderr or '') or tostring(res)))
  end

  local root = require('stepwise.client').root_for_buf(vim.api.nvim_get_current_buf()) or vim.fn.getcwd()
  health.start('stepwise: configuration (stepwise doctor, for ' .. root .. ')')
  local report, err = M.doctor(path, root, opts)
  if not report then
    health.error(err or 'stepwise doctor gave no report')
  else
    health.info('provider: ' .. report.provider.value .. ' (' .. source(report.provider) .. ')')
    if report.model.value ~= vim.NIL and report.model.value ~= nil then
      health.ok('model: ' .. report.model.value .. ' (' .. source(report.model) .. ')')
    end
    health.info('base URL: ' .. report.baseUrl.value .. ' (' .. source(report.baseUrl) .. ')')
    if report.apiKey.set then
      health.ok(report.apiKey.variable .. ' is set (' .. source(report.apiKey) .. ')')
    else
      health.info(report.apiKey.variable .. ' is not set')
    end
    for _, f in ipairs(report.envFiles or {}) do
      health.info('.env file read: ' .. f)
    end
    for _, p in ipairs(report.problems or {}) do
      health.error(p, { 'set it in the environment Neovim starts from, a .env file in the workspace, or setup({ ... })' })
    end
    if report.ok then
      health.ok('ready: a run can reach the model')
    end
    health.info('state dir: ' .. tostring(report.stateDir ~= vim.NIL and report.stateDir or 'none'))
    M.instructions_and_mcp(report, health)
    M.sandbox(report, health)
  end
  health.info('approval of shell commands: ' .. (config.server_settings(opts).approval or 'ask'))

  health.start('stepwise: client')
  local c = require('stepwise.client').get()
  if not c then
    health.info('not running (it starts with the first file buffer, or :Stepwise run)')
  else
    health.ok(string.format('client %d running', c.id))
    for _, f in ipairs(c.workspace_folders or {}) do
      local folder = require('stepwise.state').get(f.uri)
      local st = folder and folder.state or 'idle'
      health.info(string.format('folder %s: %s', f.name or f.uri, st))
    end
  end
end

--- Whether shell commands run sandboxed, from doctor's report (absent from an older server).
function M.sandbox(report, health)
  local s = report.sandbox
  if type(s) ~= 'table' then
    return
  end
  if s.mode == 'off' then
    health.info('sandbox: off (every shell command asks)')
  elseif s.available == false then
    health.warn('sandbox cannot start: ' .. tostring(s.reason) .. '; every shell command asks for approval', {
      'Linux needs Landlock (kernel 6.7+); or set sandbox = "off" to silence this',
    })
  else
    health.ok(string.format('sandbox: %s (%s, network %s)', s.mode, tostring(s.by), s.network))
  end
end

--- The instruction files and MCP servers of doctor's report (none of the servers is started by it).
function M.instructions_and_mcp(report, health)
  local files = report.instructions or {}
  if #files == 0 then
    health.info('instruction files: none (AGENTS.md or CLAUDE.md at the workspace root)')
  end
  for _, f in ipairs(files) do
    if f.error ~= nil and f.error ~= vim.NIL then
      health.warn('instruction file ' .. f.path .. ' is unreadable: ' .. f.error)
    elseif f.cut then
      health.warn(string.format('instruction file %s: %d of %d bytes used (32 KiB in all)', f.path, f.used, f.bytes))
    else
      health.ok(string.format('instruction file %s (%d bytes)', f.path, f.bytes))
    end
  end
  local servers = report.mcpServers or {}
  if #servers == 0 then
    health.info('MCP servers: none')
  end
  for _, s in ipairs(servers) do
    local what = s.transport == 'http' and s.url or table.concat(vim.list_extend({ s.command }, s.args or {}), ' ')
    local line = string.format('MCP server %s (%s, %s): %s', s.name, s.transport, s.origin, what)
    if s.state == 'untrusted' then
      health.warn(line .. ': not trusted yet', { 'it starts once you trust the workspace .mcp.json when asked' })
    else
      health.ok(line)
    end
  end
  for _, p in ipairs(report.mcpProblems or {}) do
    health.error('MCP: ' .. p)
  end
end

return M
