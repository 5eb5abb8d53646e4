-- A real language server beside stepwise in the specs and benchmarks: pylsp (with pyflakes), installed by
-- tests/intel/setup.sh from PyPI under ~/.cache/stepwise-tools/intel, configured as a user would for Python.
local H = require('helpers')
local api = vim.api

local P = {}

--- The venv's bin folder of tests/intel/setup.sh (installed on first use); a failure fails the test.
function P.bin()
  local r = vim.system({ 'bash', H.root .. '/tests/intel/setup.sh' }, { text = true }):wait(300000)
  if r.code ~= 0 then
    H.fail('tests/intel/setup.sh could not install pylsp: ' .. (r.stderr or ''))
  end
  local bin = vim.trim(r.stdout or '')
  H.truthy(vim.fn.executable(bin .. '/pylsp') == 1, 'pylsp in ' .. bin)
  return bin
end

--- pylsp as the user's configuration starts it (`name`, for every Python buffer of `dir`), warm: `dir/calc.py`
--- opened in a buffer, stepwise and pylsp attached to it, pylsp's first diagnostics published. Returns the buffer.
function P.warm(bin, name, dir)
  vim.lsp.config(name, { cmd = { bin .. '/pylsp' }, filetypes = { 'python' }, root_markers = { 'calc.py' } })
  vim.lsp.enable(name)
  vim.cmd.edit(vim.fn.fnameescape(dir .. '/calc.py'))
  local calc = api.nvim_get_current_buf()
  H.wait_attached(calc)
  H.wait(function()
    return #vim.lsp.get_clients({ name = name, bufnr = calc }) > 0 and require('stepwise.query').settled(calc, nil)
  end, 30000, "pylsp's first diagnostics")
  return calc
end

--- Stops the pylsp of `P.warm`.
function P.stop(name)
  vim.lsp.enable(name, false)
  for _, c in ipairs(vim.lsp.get_clients({ name = name })) do
    c:stop(true)
  end
end

return P
