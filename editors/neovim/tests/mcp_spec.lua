-- Instruction files and MCP servers in :checkhealth stepwise (from `stepwise doctor --json`), and the
-- mcp_servers option on the wire.
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
})
