-- A small test runner for headless Neovim (no plenary): runs the tests of one spec file in order,
-- each with its own time budget, and reports `ok` / `FAIL` lines and a result file.
local M = {}

local uv = vim.uv or vim.loop

local function out(s)
  io.stdout:write(s .. '\n')
  io.stdout:flush()
end
M.out = out

local current ---@type {name: string, deadline: number}?

--- Functions run after every test (and its cleanup); one that errors fails the test.
M.after_test = {}

--- Milliseconds left for the running test.
function M.remaining()
  if not current then
    return 30000
  end
  return math.max(0, current.deadline - uv.now())
end

--- Run `fn` in a spec file: `spec` is a list of { name, fn, timeout? (ms), after? }.
---@param path string
function M.run_file(path, result_file)
  local ok_load, spec = pcall(dofile, path)
  local passed, failed = 0, 0
  local file = vim.fn.fnamemodify(path, ':t:r')
  if not ok_load then
    out(string.format('FAIL %s: could not load: %s', file, tostring(spec)))
    failed = 1
    spec = {}
  end
  local only = vim.env.STEPWISE_TEST_FILTER
  for _, t in ipairs(spec.tests or spec) do
    if not only or only == '' or t.name:find(only, 1, true) then
      local timeout = t.timeout or 30000
      uv.update_time()
      current = { name = t.name, deadline = uv.now() + timeout }
      local start = uv.now()
      local ok, err = xpcall(t.fn, function(e)
        local msg = type(e) == 'table' and e.message or tostring(e)
        return { message = msg, trace = debug.traceback('', 2) }
      end)
      -- per-test cleanup, whatever happened
      local ok_clean, clean_err = true, nil
      if spec.after_each then
        ok_clean, clean_err = pcall(spec.after_each, t, ok)
      end
      uv.update_time()
      local ms = uv.now() - start
      if ok and not ok_clean then
        ok = false
        err = { message = 'cleanup failed: ' .. tostring(clean_err), trace = '' }
      end
      -- checks registered by the helpers (what the server sent fits its schema)
      for _, check in ipairs(M.after_test) do
        local ok_check, check_err = pcall(check)
        if ok and not ok_check then
          ok = false
          err = { message = tostring(check_err), trace = '' }
        end
      end
      if ok then
        passed = passed + 1
        out(string.format('ok   %s :: %s (%d ms)', file, t.name, ms))
      else
        failed = failed + 1
        out(string.format('FAIL %s :: %s (%d ms)', file, t.name, ms))
        out('     ' .. tostring(err.message):gsub('\n', '\n     '))
        if vim.env.STEPWISE_TEST_VERBOSE == '1' and err.trace then
          out(err.trace)
        end
        if spec.on_failure then
          pcall(spec.on_failure, t)
        end
      end
      current = nil
    end
  end
  if result_file then
    local f = io.open(result_file, 'w')
    if f then
      f:write(string.format('%d %d\n', passed, failed))
      f:close()
    end
  end
  return passed, failed
end

--- Entry point: run one spec file then quit (exit code 1 when a test failed).
function M.main(path, result_file)
  local ok, passed, failed = pcall(M.run_file, path, result_file)
  if not ok then
    out('FAIL runner: ' .. tostring(passed))
    failed = 1
  end
  vim.schedule(function()
    vim.cmd((failed and failed > 0) and 'cquit 1' or 'qall!')
  end)
end

return M
