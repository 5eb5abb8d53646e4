-- Plugin managers that install this repository (lazy.nvim: `{ "<owner>/stepwise", build = "cargo build
-- --release -p stepwise", main = "stepwise", opts = {} }`) put its root on 'runtimepath'; the Neovim plugin
-- lives in editors/neovim. This adds that folder (its lua/, lsp/ and doc/) and loads its plugin file.
local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h') .. '/editors/neovim'
if not vim.tbl_contains(vim.opt.runtimepath:get(), plugin) then
  vim.opt.runtimepath:append(plugin)
end
vim.cmd.source(vim.fn.fnameescape(plugin .. '/plugin/stepwise.lua'))
