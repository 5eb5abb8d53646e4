-- stepwise.nvim: defines :Stepwise; everything else waits for require('stepwise').setup().
if vim.g.loaded_stepwise then
  return
end
vim.g.loaded_stepwise = true

if vim.fn.has('nvim-0.11') ~= 1 then
  vim.api.nvim_echo({ { 'stepwise.nvim needs Neovim 0.11 or later', 'WarningMsg' } }, true, {})
  return
end

vim.api.nvim_create_user_command('Stepwise', function(o)
  require('stepwise').command(o)
end, {
  nargs = '*',
  range = true,
  bang = true,
  complete = function(...)
    return require('stepwise').complete(...)
  end,
  desc = 'stepwise: run {task} | cancel | reset | plan | log',
})
