-- :checkhealth stepwise
local M = {}

local health = vim.health

local function env(name, cmd_env)
  if cmd_env and cmd_env[name] ~= nil then
    return cmd_env[name]
  end
  return vim.env[name]
end

local function is_set(v)
  return v ~= nil and v ~= ''
end

--- Names defined in a .env file (values are never read out).
local function dotenv_names(dir)
  local names = {}
  local path = dir .. '/.env'
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  for line in f:lines() do
    local name = line:match('^%s*export%s+([%w_]+)%s*=') or line:match('^%s*([%w_]+)%s*=')
    if name then
      names[name] = true
    end
  end
  f:close()
  return names, path
end

function M.check()
  local config = require('stepwise.config')
  local opts = config.get()

  health.start('stepwise: Neovim')
  local v = vim.version()
  local vs = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. vs)
  else
    health.error('Neovim ' .. vs .. ': stepwise.nvim needs 0.10 or later')
  end
  if not require('stepwise')._did_setup then
    health.warn('setup() has not been called', { "require('stepwise').setup({})" })
  end

  health.start('stepwise: server binary')
  local exe = opts.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    health.error(string.format('`%s` not found (cmd = %s)', exe, vim.inspect(opts.cmd)), {
      'build it: cargo build --release -p stepwise, and put target/release/stepwise on $PATH',
      "or point setup({ cmd = { '/path/to/stepwise', 'lsp' } }) at it",
    })
  else
    local path = vim.fn.exepath(exe)
    local ok, res = pcall(function()
      return vim.system({ path, '--version' }, { text = true }):wait(5000)
    end)
    if ok and res and res.code == 0 then
      health.ok(string.format('%s: %s', path, vim.trim(res.stdout or '')))
    else
      local why = ok and res and (vim.trim(res.stderr or '') ~= '' and vim.trim(res.stderr) or ('exit ' .. tostring(res.code)))
        or tostring(res)
      health.error(string.format('%s --version failed: %s', path, why))
    end
  end

  health.start('stepwise: model provider')
  local settings = config.server_settings(opts)
  local cmd_env = opts.cmd_env
  local provider = settings.provider or env('STEPWISE_PROVIDER', cmd_env) or 'anthropic'
  if provider ~= 'anthropic' and provider ~= 'openai' then
    health.error(string.format("provider '%s' is not 'anthropic' or 'openai'", provider))
  else
    health.ok('provider: ' .. provider .. (settings.provider and ' (setup)' or ''))
  end
  local key_var = settings.apiKeyEnv or (provider == 'openai' and 'OPENAI_API_KEY' or 'ANTHROPIC_API_KEY')
  local base_var = provider == 'openai' and 'OPENAI_BASE_URL' or 'ANTHROPIC_BASE_URL'
  local dot, dot_path = dotenv_names(vim.fn.getcwd())
  if is_set(env(key_var, cmd_env)) then
    health.ok(key_var .. ' is set')
  elseif dot and dot[key_var] then
    health.ok(key_var .. ' is defined in ' .. dot_path)
  elseif provider == 'openai' then
    health.warn(key_var .. ' is not set (a local server such as Ollama may not need it)')
  else
    health.warn(key_var .. ' is not set', { 'export ' .. key_var .. ' in the environment Neovim starts from, or put it in a .env file in the workspace' })
  end
  local model = settings.model or env('MODEL_ID', cmd_env)
  if is_set(model) then
    health.ok('model: ' .. model)
  elseif dot and dot.MODEL_ID then
    health.ok('MODEL_ID is defined in ' .. dot_path)
  else
    health.warn('no model: set MODEL_ID or setup({ model = ... })')
  end
  local base = settings.baseUrl or env(base_var, cmd_env)
  if is_set(base) then
    health.info('base URL: ' .. base)
  else
    health.info(base_var .. ' not set: the provider default is used')
  end
  health.info('approval of shell commands: ' .. (settings.approval or 'ask'))

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

return M
