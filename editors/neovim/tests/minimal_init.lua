-- Minimal init for the tests: Neovim's own runtime plus this plugin, nothing else.
local tests = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin = vim.fn.fnamemodify(tests, ':h')
-- this plugin, then only the entries of Neovim's own installation (runtime, bundled parsers)
local prefix = vim.fn.fnamemodify(vim.env.VIMRUNTIME, ':h:h:h')
local rtp = { plugin }
for _, p in ipairs(vim.opt.runtimepath:get()) do
  if vim.startswith(p, prefix) and not vim.tbl_contains(rtp, p) then
    rtp[#rtp + 1] = p
  end
end
vim.opt.runtimepath = rtp
vim.opt.packpath = { vim.env.VIMRUNTIME }
vim.o.swapfile = false
vim.o.shadafile = 'NONE'
vim.o.more = false
vim.o.hidden = true
package.path = tests .. '/?.lua;' .. package.path
vim.g.stepwise_test_dir = tests
vim.g.stepwise_plugin_dir = plugin
