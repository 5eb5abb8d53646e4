-- Commands, completion, :checkhealth, the help file, and one client for every folder.
local H = require('helpers')
local api = vim.api

return H.spec({
  {
    name = ':Stepwise completes its subcommands',
    fn = function()
      require('stepwise').setup({ keymaps = false, autostart = false })
      H.eq({ 'allow', 'apply', 'attach', 'cancel', 'chat', 'checkpoints', 'close', 'compact', 'deny', 'discard', 'jobs', 'kill', 'log', 'new', 'plan', 'reset', 'review', 'rewind', 'run', 'sessions', 'status', 'steer', 'stop' }, vim.fn.sort(vim.fn.getcompletion('Stepwise ', 'cmdline')), 'all subcommands')
      H.eq({ 'reset', 'review', 'rewind', 'run' }, vim.fn.sort(vim.fn.getcompletion('Stepwise r', 'cmdline')), "subcommands starting with r")
      H.eq({}, vim.fn.getcompletion('Stepwise run ', 'cmdline'), 'nothing after a subcommand')
      H.eq({ 'edit', 'first', 'approve' }, vim.fn.getcompletion('Stepwise plan ', 'cmdline'), 'plan edit, first, approve')
      H.eq({}, vim.fn.getcompletion('Stepwise plan edit ', 'cmdline'), 'nothing after plan edit')
      H.eq({ 'keep', 'undo', 'comment' }, vim.fn.getcompletion('Stepwise review ', 'cmdline'), 'review keep | undo | comment')
      H.eq({ 'worktree' }, vim.fn.getcompletion('Stepwise new ', 'cmdline'), 'new worktree')
    end,
  },
  {
    name = 'keymaps from setup() map the actions',
    fn = function()
      require('stepwise').setup({ autostart = false, keymaps = { run = '<leader>xr', plan = '<leader>xp', cancel = false, log = false } })
      local run = vim.fn.maparg('<leader>xr', 'n', false, true)
      H.eq('stepwise: run a task', run.desc, 'run mapping')
      H.eq('stepwise: toggle the plan', vim.fn.maparg('<leader>xp', 'n', false, true).desc, 'plan mapping')
      H.eq('', vim.fn.maparg('<leader>sc', 'n'), 'disabled mappings are not set')
    end,
  },
  {
    name = ':checkhealth stepwise shows the server, Neovim and what `stepwise doctor` sees, never a key',
    timeout = 20000,
    fn = function()
      local dir = H.workspace({ ['.env'] = 'MODEL_ID=model-from-dotenv\n' })
      vim.env.ANTHROPIC_API_KEY = 'sekrit-value-123'
      vim.env.MODEL_ID = nil
      require('stepwise').setup({ cmd = { H.server_bin, 'lsp' }, autostart = false, keymaps = false })
      vim.cmd('silent checkhealth stepwise')
      local text = H.buf_text(0)
      H.contains(text, H.server_bin .. ' (setup({ cmd }))', 'health report names the binary')
      H.contains(text, 'Neovim ' .. vim.version().major .. '.' .. vim.version().minor, 'health report names Neovim')
      H.contains(text, 'ANTHROPIC_API_KEY is set (environment)', 'the key, from doctor')
      H.contains(text, 'model: model-from-dotenv (from ' .. dir .. '/.env)', 'the model and its .env file, from doctor')
      H.contains(text, '.env file read: ' .. dir .. '/.env', 'the .env files read')
      H.contains(text, 'ready: a run can reach the model', 'health report')
      H.contains(text, 'sandbox: workspace-write (Landlock ABI ', 'the sandbox, from doctor')
      H.truthy(not text:find('sekrit', 1, true), 'the key value is never printed')
      local version = vim.system({ H.server_bin, '--version' }, { text = true }):wait(5000)
      H.contains(text, vim.trim(version.stdout), 'health report shows stepwise --version')
      -- What is missing is doctor's own wording; settings from setup() count.
      vim.env.ANTHROPIC_API_KEY = nil
      os.remove(dir .. '/.env')
      vim.cmd('silent checkhealth stepwise')
      text = H.buf_text(0)
      H.contains(text, 'no model configured: set MODEL_ID', 'health report')
      require('stepwise').setup({ cmd = { H.server_bin, 'lsp' }, autostart = false, keymaps = false, model = 'from-setup' })
      vim.cmd('silent checkhealth stepwise')
      text = H.buf_text(0)
      H.contains(text, 'model: from-setup (setup())', 'the setup() model')
      require('stepwise').setup({ cmd = { H.server_bin, 'lsp' }, autostart = false, keymaps = false, sandbox = 'off' })
      vim.cmd('silent checkhealth stepwise')
      H.contains(H.buf_text(0), 'sandbox: off (every shell command asks)', 'the setup() sandbox setting')
      H.contains(text, 'no API key: set ANTHROPIC_API_KEY', 'health report')
      -- a missing binary is an error
      require('stepwise').setup({ cmd = { 'stepwise-no-such-binary', 'lsp' }, autostart = false, keymaps = false })
      vim.cmd('silent checkhealth stepwise')
      text = H.buf_text(0)
      H.contains(text, 'stepwise-no-such-binary', 'health report')
      H.contains(text, 'not found', 'health report')
    end,
  },
  {
    name = 'doc/stepwise.txt has valid help tags',
    fn = function()
      local tmp = H.tmpdir('doc')
      vim.fn.mkdir(tmp .. '/doc', 'p')
      H.write(tmp .. '/doc/stepwise.txt', H.read(vim.g.stepwise_plugin_dir .. '/doc/stepwise.txt'))
      vim.cmd('helptags ' .. vim.fn.fnameescape(tmp .. '/doc'))
      local tags = H.read(tmp .. '/doc/tags') or ''
      for _, tag in ipairs({ 'stepwise.txt', 'stepwise-setup', ':Stepwise', 'stepwise-health' }) do
        H.truthy(tags:find(vim.pesc(tag) .. '\t'), 'tag ' .. tag .. ' in ' .. tags)
      end
      vim.opt.runtimepath:append(tmp)
      vim.cmd('help stepwise-setup')
      H.eq('help', vim.bo.buftype, 'the help opens')
      vim.cmd('helpclose')
    end,
  },
  {
    name = 'one client serves every workspace folder',
    timeout = 30000,
    fn = function()
      local a = H.workspace({ ['one.txt'] = '1\n' }, { name = 'a' })
      local b = H.workspace({ ['two.txt'] = '2\n' }, { name = 'b', cd = false })
      local m = H.mock({ H.turn({ calls = { H.todo({ { 'In folder b', 'in_progress' } }) } }), H.turn({ text = 'ok' }) })
      H.setup(m)
      local cap = H.capture()
      vim.cmd.edit(vim.fn.fnameescape(a .. '/one.txt'))
      local ba = api.nvim_get_current_buf()
      H.wait_attached(ba)
      vim.cmd.edit(vim.fn.fnameescape(b .. '/two.txt'))
      local bb = api.nvim_get_current_buf()
      local c = H.wait_attached(bb)
      H.eq(1, #vim.lsp.get_clients({ name = 'stepwise' }), 'one stepwise client')
      H.truthy(c.attached_buffers[ba] and c.attached_buffers[bb], 'both buffers attached')
      local uris = vim.tbl_map(function(f)
        return f.uri
      end, c.workspace_folders)
      table.sort(uris)
      local want = { vim.uri_from_fname(a), vim.uri_from_fname(b) }
      table.sort(want)
      H.eq(want, uris, 'workspace folders')
      -- a run from the buffer of folder b goes to folder b
      vim.cmd('Stepwise run Work in b')
      local idle = H.wait_idle(cap, 15000)
      H.eq(vim.uri_from_fname(b), idle.workspace, 'the run was in folder b')
      H.eq(vim.uri_from_fname(b), cap.plan[1].workspace, 'the plan came for folder b')
      -- a buffer outside any folder and outside the cwd is not attached
      local outside = H.tmpdir('outside')
      H.write(outside .. '/free.txt', 'x\n')
      vim.cmd.edit(vim.fn.fnameescape(outside .. '/free.txt'))
      H.sleep(200)
      H.truthy(not c.attached_buffers[api.nvim_get_current_buf()], 'a file outside the folders is not attached')
    end,
  },
})
