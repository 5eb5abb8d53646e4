-- Neovim 0.11: `vim.lsp.enable('stepwise')` starts the sidecar for file buffers, with the settings given to
-- require('stepwise').setup() (or the defaults). `vim.lsp.config('stepwise', { ... })` adds to it as for any
-- server. The plugin's own attaching (setup({ autostart = true })) and this share one client.
return require('stepwise').lsp_config()
