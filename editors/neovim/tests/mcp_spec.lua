-- Instruction files and MCP servers in :checkhealth stepwise (from `stepwise doctor --json`), the
-- mcp_servers option on the wire, and a server that failed to start shown where the plugin shows status.
local H = require('helpers')

return H.spec({
  {
    name = ':checkhealth stepwise lists instruction files and MCP servers, with their state',
    timeout = 20000,
    fn = function()
      local dir = H.workspace({
        ['AGENTS.md'] = 'Run the tests before you finish.\n',
        ['.mcp.json'] = '{"mcpServers": {"repo": {"command": "srv", "args": ["--x"]}, "bad": {}}}',
      })
      vim.env.XDG_CONFIG_HOME = H.tmpdir('config')
      vim.env.STEPWISE_STATE_DIR = H.tmpdir('state')
      local servers = { docs = { type = 'http', url = 'http://127.0.0.1:9/mcp' } }
      require('stepwise').setup({ cmd = { H.server_bin, 'lsp' }, autostart = false, keymaps = false, mcp_servers = servers })
      H.eq(servers, require('stepwise.config').server_settings().mcpServers, 'mcp_servers goes to the server as mcpServers')
      vim.cmd('silent checkhealth stepwise')
      local text = H.buf_text(0)
      H.contains(text, 'instruction file ' .. dir .. '/AGENTS.md (33 bytes)', 'the workspace AGENTS.md')
      H.contains(text, 'MCP server repo (stdio, workspace): srv --x: not trusted yet', 'the untrusted .mcp.json server')
      H.contains(text, 'MCP server docs (http, settings): http://127.0.0.1:9/mcp', 'the server from setup()')
      H.contains(text, "server 'bad'", 'a bad entry, by name')
    end,
  },
  {
    name = 'an MCP server that failed to start is shown in :Stepwise status, the statusline, the plan window and the transcript',
    timeout = 40000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      vim.env.XDG_CONFIG_HOME = H.tmpdir('config')
      local m = H.mock({
        H.turn({ calls = { H.todo({ { 'Look around', 'in_progress' } }) } }),
        H.turn({ text = 'Done.' }),
      })
      H.setup(m, { mcp_servers = { gone = { command = '/nonexistent/mcp-server' } } })
      local cap = H.capture()
      local reported
      vim.api.nvim_create_autocmd('User', {
        pattern = 'StepwiseMcp',
        callback = function(ev)
          reported = ev.data
        end,
      })
      local stepwise = require('stepwise')
      H.eq('', stepwise.statusline(), 'nothing to show before the first run')
      vim.cmd('Stepwise run Look around')
      H.wait_idle(cap, 20000)
      H.wait(function()
        return reported
      end, 20000, 'stepwise/mcp')
      H.eq('gone', reported.servers[1].name, 'the server, by name')
      H.eq('failed', reported.servers[1].state, 'its state')

      local lines = stepwise.status()
      local line = lines[#lines]
      H.truthy(line:find('^MCP server gone %(settings%) failed: .+'), 'the failure and why in :Stepwise status: ' .. vim.inspect(lines))
      H.contains(line, '/nonexistent/mcp-server', 'the error names the command')
      H.contains(stepwise.statusline(), '⚠ MCP: gone failed', 'the statusline')
      vim.cmd('Stepwise plan')
      local title
      for _, w in ipairs(vim.api.nvim_list_wins()) do
        local cfg = vim.api.nvim_win_get_config(w)
        if cfg.relative ~= '' and cfg.title then
          title = table.concat(vim.tbl_map(function(c)
            return type(c) == 'table' and c[1] or tostring(c)
          end, type(cfg.title) == 'table' and cfg.title or { cfg.title }))
        end
      end
      H.contains(title, '⚠ MCP: gone failed', 'the plan window title')
      H.contains(table.concat(require('stepwise.log').lines(), '\n'), '⚠ MCP server gone (settings) failed', 'the transcript')
    end,
  },
})
