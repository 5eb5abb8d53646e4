-- Neovim 0.11's own way: lsp/stepwise.lua with vim.lsp.config / vim.lsp.enable, and the server found in the
-- plugin's checkout (what lazy.nvim's build step makes) before $PATH.
local H = require('helpers')
local api = vim.api

--- An executable shell script at `path` that prints `name` for --version.
local function fake_server(path, name)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  H.write(path, '#!/bin/sh\necho ' .. name .. '\n')
  vim.fn.setfperm(path, 'rwxr-xr-x')
end

return H.spec({
  {
    name = 'the server is looked up in the checkout: target/release, then target/debug, then $PATH',
    fn = function()
      local config = require('stepwise.config')
      -- This plugin's own checkout: the repository root, two levels above editors/neovim.
      H.eq(vim.fn.resolve(H.root), vim.fn.resolve(config.checkout), 'the checkout of the plugin')
      local fake = H.tmpdir('checkout')
      local on_path = H.tmpdir('bin')
      fake_server(on_path .. '/stepwise', 'path')
      local old_path, old_checkout = vim.env.PATH, config.checkout
      vim.env.PATH = on_path .. ':' .. old_path
      config.checkout = fake
      local ok, err = pcall(function()
        config.set({})
        H.eq({ 'stepwise', 'lsp' }, config.cmd(), 'nothing built: stepwise on $PATH')
        H.eq(on_path .. '/stepwise', vim.fn.exepath(config.cmd()[1]), 'the one on $PATH')
        fake_server(fake .. '/target/debug/stepwise', 'debug')
        H.eq({ fake .. '/target/debug/stepwise', 'lsp' }, config.cmd(), 'a debug build wins over $PATH')
        fake_server(fake .. '/target/release/stepwise', 'release')
        H.eq({ fake .. '/target/release/stepwise', 'lsp' }, config.cmd(), 'a release build wins over a debug one')
        config.set({ cmd = { '/opt/stepwise', 'lsp' } })
        H.eq({ '/opt/stepwise', 'lsp' }, config.cmd(), 'cmd from setup() wins over everything')
        -- :checkhealth names where the server came from.
        config.set({ keymaps = false, autostart = false })
        vim.cmd('silent checkhealth stepwise')
        H.contains(H.buf_text(0), fake .. '/target/release/stepwise (built in the checkout): release', 'health')
      end)
      vim.env.PATH, config.checkout = old_path, old_checkout
      if not ok then
        error(err, 0)
      end
    end,
  },
  {
    name = "vim.lsp.enable('stepwise') attaches with lsp/stepwise.lua and serves a run",
    timeout = 30000,
    fn = function()
      local dir = H.workspace({ ['greet.txt'] = 'Hello\n' })
      local m = H.mock({
        H.turn({ calls = { H.todo({ { 'Greet warmly', 'in_progress' } }) } }),
        H.turn({ calls = { { 'edit_file', { path = 'greet.txt', old_text = 'Hello', new_text = 'Hello, welcome' } } } }),
        H.turn({ calls = { H.todo({ { 'Greet warmly', 'completed' } }) } }),
        H.turn({ text = 'Done.' }),
      })
      -- No setup(): the model comes from the environment the server inherits, as for any LSP server.
      vim.env.ANTHROPIC_API_KEY = 'dummy'
      vim.env.ANTHROPIC_BASE_URL = m.url
      vim.env.MODEL_ID = 'mock-model'
      vim.env.STEPWISE_STATE_DIR = H.tmpdir('state')
      -- The default cmd is the checkout's build; the test pins the one test.sh built, as a user may.
      H.truthy(vim.startswith(require('stepwise.config').cmd()[1], require('stepwise.config').checkout .. '/target/'), 'the default cmd is the checkout build')
      vim.lsp.config('stepwise', { cmd = { H.server_bin, 'lsp' } })
      vim.lsp.enable('stepwise')
      local cap = H.capture()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/greet.txt'))
      local buf = api.nvim_get_current_buf()
      local c = H.wait_attached(buf)
      H.eq('stepwise', c.name, 'the client of lsp/stepwise.lua')
      H.eq({ { uri = vim.uri_from_fname(dir), name = dir } }, c.workspace_folders, 'the buffer root is the folder')
      H.eq(true, c.config.capabilities.experimental.stepwise.saveDocuments, "the plugin's capabilities")
      -- A second buffer of another root: the same client, one more folder.
      local other = H.workspace({ ['b.txt'] = 'b\n' }, { name = 'other', cd = false })
      vim.cmd.edit(vim.fn.fnameescape(other .. '/b.txt'))
      H.wait(function()
        return #H.client().workspace_folders == 2
      end, 5000, 'the second folder')
      H.eq(1, #vim.lsp.get_clients({ name = 'stepwise' }), 'one client')
      vim.cmd.buffer(buf)
      -- The plugin's :Stepwise runs on that client, and its handlers apply the edit to the buffer.
      vim.cmd('Stepwise run Greet warmly')
      local idle = H.wait_idle(cap, 20000)
      H.eq('end_turn', idle.reason, 'the run ended')
      H.eq('Hello, welcome', H.buf_text(buf), 'the edit landed in the buffer')
      H.eq(c.id, H.client().id, 'no second client was started')
      local messages = vim.fn.execute('messages')
      H.truthy(not messages:find('ignoring the setting', 1, true), 'the server took the (empty) settings: ' .. messages)
      vim.lsp.enable('stepwise', false)
      vim.env.ANTHROPIC_BASE_URL, vim.env.MODEL_ID = nil, nil
    end,
  },
  {
    name = 'installed from the repository root as lazy.nvim does: the root shim loads editors/neovim',
    timeout = 20000,
    fn = function()
      -- A Neovim with only the repository root on 'runtimepath' (what lazy.nvim adds for a plugin), whose
      -- plugin/ files are sourced as a plugin manager does, then `main = "stepwise"` and `opts`.
      local out = H.tmpdir('lazy') .. '/result.json'
      local probe = table.concat({
        'local r = {}',
        "r.command = vim.fn.exists(':Stepwise') == 2",
        "r.setup = pcall(function() require('stepwise').setup({ keymaps = false, autostart = false }) end)",
        "r.checkout = require('stepwise.config').checkout",
        "r.lsp = vim.api.nvim_get_runtime_file('lsp/stepwise.lua', false)[1]",
        "r.help = vim.api.nvim_get_runtime_file('doc/stepwise.txt', false)[1]",
        "r.cmd = vim.lsp.config.stepwise and vim.lsp.config.stepwise.cmd",
        'vim.fn.writefile({ vim.json.encode(r) }, ' .. vim.inspect(out) .. ')',
      }, '\n')
      local res = vim.system({
        vim.v.progpath, '--headless', '--clean', '-i', 'NONE',
        '--cmd', 'set rtp^=' .. vim.fn.fnameescape(H.root),
        '-c', 'runtime! plugin/**/*.lua',
        '-c', 'lua ' .. probe,
        '-c', 'qa!',
      }, { text = true }):wait(15000)
      H.eq(0, res.code, 'nvim exited cleanly: ' .. (res.stderr or ''))
      local r = vim.json.decode(H.read(out) or 'null')
      H.truthy(r, 'the probe wrote its result: ' .. (res.stderr or ''))
      H.eq(true, r.command, ':Stepwise is defined')
      H.eq(true, r.setup, "require('stepwise').setup(opts) works")
      H.eq(vim.fn.resolve(H.root), vim.fn.resolve(r.checkout), 'the checkout is the repository root')
      H.eq(vim.fn.resolve(H.root .. '/editors/neovim/lsp/stepwise.lua'), vim.fn.resolve(r.lsp), 'lsp/stepwise.lua is on the runtimepath')
      H.truthy(r.help, 'the help file is on the runtimepath')
      H.truthy(type(r.cmd) == 'table' and vim.startswith(r.cmd[1], r.checkout .. '/target/'), "vim.lsp.config.stepwise starts the checkout's build: " .. vim.inspect(r.cmd))
    end,
  },
})
