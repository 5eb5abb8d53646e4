-- Helpers for the specs: waiting with a bound, workspaces, the mock model, captures.
local H = {}

local runner = require('runner')
local api = vim.api
local uv = vim.uv or vim.loop

H.root = vim.env.STEPWISE_REPO_ROOT or vim.fn.fnamemodify(vim.g.stepwise_plugin_dir, ':h:h')
H.server_bin = vim.env.STEPWISE_BIN or (H.root .. '/target/debug/stepwise')
H.mock_bin = vim.env.STEPWISE_MOCK_MODEL or (H.root .. '/target/debug/mock-model')

-- ---------------------------------------------------------------------------
-- assertions

function H.fail(msg)
  error({ message = msg }, 2)
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error({
      message = string.format('%s\n  expected: %s\n  actual:   %s', what or 'values differ', vim.inspect(expected), vim.inspect(actual)),
    }, 2)
  end
end

function H.truthy(v, what)
  if not v then
    error({ message = what or 'expected a true value' }, 2)
  end
  return v
end

function H.contains(haystack, needle, what)
  if type(haystack) ~= 'string' or not haystack:find(needle, 1, true) then
    error({ message = string.format('%s: %s does not contain %s', what or 'text', vim.inspect(haystack), vim.inspect(needle)) }, 2)
  end
end

--- Wait until `cond()` returns a true value (processing events), at most `ms` and never past the
--- test's own deadline. Fails with `what` and, when given, `describe()` of the state at that time.
---@return any the value cond returned
function H.wait(cond, ms, what, describe)
  ms = math.min(ms or 5000, runner.remaining())
  local value
  local ok = vim.wait(ms, function()
    local okc, v = pcall(cond)
    if okc and v then
      value = v
      return true
    end
    return false
  end, 20)
  if not ok then
    local msg = string.format('timed out after %d ms waiting for %s', ms, what or 'a condition')
    if describe then
      local okd, d = pcall(describe)
      msg = msg .. '\n  state: ' .. (okd and (type(d) == 'string' and d or vim.inspect(d)) or tostring(d))
    end
    error({ message = msg }, 2)
  end
  return value
end

function H.sleep(ms)
  vim.wait(math.min(ms, runner.remaining()), function()
    return false
  end, 10)
end

-- ---------------------------------------------------------------------------
-- files and workspaces

function H.tmpdir(name)
  local base = vim.env.STEPWISE_TEST_TMP or vim.fn.tempname()
  local dir = string.format('%s/%s-%d', base, name or 'ws', math.random(1, 1e9))
  vim.fn.mkdir(dir, 'p')
  return vim.fn.resolve(dir)
end

function H.write(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

function H.read(path)
  local f = io.open(path, 'r')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- A workspace folder (a directory with `.git`) holding `files` (name -> text); cd into it.
function H.workspace(files, opts)
  opts = opts or {}
  local dir = H.tmpdir(opts.name or 'ws')
  vim.fn.mkdir(dir .. '/.git', 'p')
  for name, text in pairs(files or {}) do
    H.write(dir .. '/' .. name, text)
  end
  if opts.cd ~= false then
    vim.cmd.cd(vim.fn.fnameescape(dir))
  end
  return dir
end

function H.buf_text(buf)
  return table.concat(api.nvim_buf_get_lines(buf or 0, 0, -1, false), '\n')
end

-- ---------------------------------------------------------------------------
-- the mock model

H.mocks = {}

--- Start `mock-model` with a script (a list of steps) and, for conversations answered apart (sessions side by
--- side), `routes` ({ { key = text in the first user message, steps = {...} }, ... }); returns { url, port, record, proc }.
function H.mock(steps, routes)
  if vim.fn.executable(H.mock_bin) ~= 1 then
    H.fail('mock model not built: ' .. H.mock_bin)
  end
  local dir = H.tmpdir('mock')
  local script = dir .. '/script.json'
  H.write(script, vim.json.encode(steps))
  local record = dir .. '/record.jsonl'
  local m = { record = record, script = script, stdout = '', stderr = '' }
  local cmd = { H.mock_bin, '--script', script, '--record', record }
  if routes then
    H.write(dir .. '/routes.json', vim.json.encode(routes))
    vim.list_extend(cmd, { '--routes', dir .. '/routes.json' })
  end
  m.proc = vim.system(cmd, {
    text = true,
    stdout = function(_, data)
      if data then
        m.stdout = m.stdout .. data
      end
    end,
    stderr = function(_, data)
      if data then
        m.stderr = m.stderr .. data
      end
    end,
  })
  table.insert(H.mocks, m)
  local port = H.wait(function()
    return m.stdout:match('listening http://127%.0%.0%.1:(%d+)')
  end, 10000, 'the mock model to listen', function()
    return { stdout = m.stdout, stderr = m.stderr }
  end)
  m.port = tonumber(port)
  m.url = 'http://127.0.0.1:' .. port
  return m
end

--- The requests the mock model received (decoded JSON lines of the record file).
function H.recorded(m)
  local text = H.read(m.record) or ''
  local out = {}
  for line in text:gmatch('[^\n]+') do
    local ok, v = pcall(vim.json.decode, line)
    if ok then
      out[#out + 1] = v
    end
  end
  return out
end

--- Every table inside `v` (depth first) for which pred is true.
function H.find_all(v, pred, acc)
  acc = acc or {}
  if type(v) == 'table' then
    if pred(v) then
      acc[#acc + 1] = v
    end
    for _, x in pairs(v) do
      H.find_all(x, pred, acc)
    end
  end
  return acc
end

--- The text of a tool_result's content (string or blocks).
function H.result_text(block)
  local c = block.content
  if type(c) == 'string' then
    return c
  end
  local parts = {}
  for _, b in ipairs(type(c) == 'table' and c or {}) do
    if type(b) == 'table' and type(b.text) == 'string' then
      parts[#parts + 1] = b.text
    end
  end
  return table.concat(parts, '\n')
end

function H.tool_results(m)
  return H.find_all(H.recorded(m), function(t)
    return t.type == 'tool_result'
  end)
end

function H.stop_mocks()
  for _, m in ipairs(H.mocks) do
    pcall(function()
      m.proc:kill(15)
    end)
  end
  H.mocks = {}
end

-- mock script steps
function H.turn(opts)
  local calls = {}
  for _, c in ipairs(opts.calls or {}) do
    calls[#calls + 1] = { name = c[1], input = c[2] }
  end
  return {
    type = 'turn',
    text = opts.text or '',
    tool_calls = calls,
    delay_ms = opts.delay or 0,
    chunk_delay_ms = opts.chunk_delay,
    usage = opts.usage,
  }
end

function H.todo(items)
  local list = {}
  for i, it in ipairs(items) do
    list[#list + 1] = { id = tostring(i), text = it[1], status = it[2] }
  end
  return { 'todo', { items = list } }
end

-- ---------------------------------------------------------------------------
-- the plugin

--- setup() against the mock model (`state_dir`: keep the sessions there, e.g. across a restart).
function H.setup(m, extra, state_dir)
  if vim.fn.executable(H.server_bin) ~= 1 then
    H.fail('server not built: ' .. H.server_bin)
  end
  vim.env.ANTHROPIC_API_KEY = 'dummy'
  vim.env.STEPWISE_STATE_DIR = state_dir or H.tmpdir('state')
  local opts = vim.tbl_extend('force', {
    cmd = { H.server_bin, 'lsp' },
    provider = 'anthropic',
    base_url = m and m.url or 'http://127.0.0.1:9',
    model = 'mock-model',
    approval = 'auto',
    -- today's behaviour, which these specs were written for; the server's own tests cover the sandbox
    sandbox = 'off',
    keymaps = false,
  }, extra or {})
  return require('stepwise').setup(opts)
end

--- A run in a workspace with `a.txt`, from `:Stepwise run {prompt}` to its end, against a mock model of `steps`
--- (the set-up of the specs that check what a whole run sends). Returns the mock, the capture, the idle status.
function H.run_task(prompt, steps, extra, ms)
  H.workspace({ ['a.txt'] = 'a\n' })
  local m = H.mock(steps)
  H.setup(m, extra)
  local cap = H.capture()
  vim.cmd('Stepwise run ' .. prompt)
  return m, cap, H.wait_idle(cap, ms or 15000)
end

function H.client()
  return require('stepwise.client').get()
end

--- Wait for the client to run, be initialized and have `buf` attached (when given).
function H.wait_attached(buf)
  return H.wait(function()
    local c = H.client()
    return c and c.initialized and (not buf or (c.attached_buffers or {})[buf]) and c
  end, 10000, 'the stepwise client to attach' .. (buf and (' to buffer ' .. buf) or ''))
end

--- Record notifications, User events and LSP progress from now on.
function H.capture()
  local cap = { notify = {}, status = {}, plan = {}, progress = {}, toolcalls = {} }
  H._orig_notify = H._orig_notify or vim.notify
  vim.notify = function(msg, level, opts)
    table.insert(cap.notify, { msg = msg, level = level })
  end
  local group = api.nvim_create_augroup('stepwise-test-capture', { clear = true })
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'StepwiseStatus', 'StepwisePlan', 'StepwiseToolCall' },
    callback = function(ev)
      local key = ({ StepwiseStatus = 'status', StepwisePlan = 'plan', StepwiseToolCall = 'toolcalls' })[ev.match]
      table.insert(cap[key], vim.deepcopy(ev.data))
    end,
  })
  api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      table.insert(cap.progress, vim.deepcopy(ev.data))
    end,
  })
  H.cap = cap
  return cap
end

--- Wait for `stepwise/status` idle (after `from` events), returning its params.
function H.wait_idle(cap, ms, from)
  from = from or 0
  return H.wait(function()
    for i = from + 1, #cap.status do
      local s = cap.status[i]
      if s.state == 'idle' then
        return s
      end
    end
  end, ms or 15000, 'stepwise/status idle', function()
    return { status = cap.status, notify = cap.notify }
  end)
end

--- The last plan event of the capture.
function H.last_plan(cap)
  local p = cap.plan[#cap.plan]
  return p and p.plan
end

--- Virtual texts shown on a line of a buffer (in any namespace), joined.
function H.virt_texts(buf, line)
  local texts = {}
  for name, ns in pairs(api.nvim_get_namespaces()) do
    for _, m in ipairs(api.nvim_buf_get_extmarks(buf, ns, { line, 0 }, { line, -1 }, { details = true })) do
      local parts = {}
      for _, chunk in ipairs(m[4].virt_text or {}) do
        parts[#parts + 1] = chunk[1]
      end
      if #parts > 0 then
        texts[#texts + 1] = { ns = name, text = table.concat(parts) }
      end
    end
  end
  return texts
end

--- The code lens text displayed on a line (the built-in display, namespace vim_lsp_codelens*).
function H.lens_text(buf, line)
  local t = {}
  for _, v in ipairs(H.virt_texts(buf, line)) do
    if v.ns:find('codelens', 1, true) then
      t[#t + 1] = v.text
    end
  end
  return table.concat(t, ' | ')
end

--- Everything a failing test may want to show: tail of the LSP log.
function H.lsp_log_tail(n)
  local path = vim.lsp.get_log_path()
  local text = H.read(path) or ''
  local lines = vim.split(text, '\n')
  local from = math.max(1, #lines - (n or 30))
  return table.concat(vim.list_slice(lines, from), '\n')
end

--- Cleanup between tests.
function H.reset()
  pcall(function()
    require('stepwise').stop(3000)
  end)
  H.stop_mocks()
  if H._orig_notify then
    vim.notify = H._orig_notify
  end
  if H._orig_select then
    vim.ui.select = H._orig_select
    H._orig_select = nil
  end
  pcall(api.nvim_del_augroup_by_name, 'stepwise-test-capture')
  vim.cmd('silent! %bwipeout!')
end

--- Replace vim.ui.select for the test (restored by H.reset()).
function H.stub_select(fn)
  H._orig_select = H._orig_select or vim.ui.select
  vim.ui.select = fn
end

--- Errors of the plugin's handlers logged by the LSP client since the last call (the client logs
--- a handler's error instead of raising it, so a test would not see it otherwise).
local log_seen = 0
function H.new_handler_errors()
  local text = H.read(vim.lsp.get_log_path()) or ''
  local fresh = text:sub(log_seen + 1)
  log_seen = #text
  local errors = {}
  for line in fresh:gmatch('[^\n]+') do
    if line:find('HANDLER_ERROR', 1, true) or line:find('CALLBACK_ERROR', 1, true) then
      errors[#errors + 1] = line
    end
  end
  return errors
end

--- The spec table with the usual hooks.
function H.spec(tests)
  return {
    tests = tests,
    after_each = function()
      H.reset()
      local errors = H.new_handler_errors()
      if #errors > 0 then
        error('handler errors in the LSP log:\n' .. table.concat(errors, '\n'))
      end
    end,
    on_failure = function()
      if vim.env.STEPWISE_TEST_VERBOSE == '1' then
        runner.out('     --- lsp.log (tail) ---\n' .. H.lsp_log_tail(40))
      end
    end,
  }
end

-- ---------------------------------------------------------------------------
-- everything the server sends the plugin fits docs/protocol.schema.json (tests/schema.lua), checked
-- after each test

H.schema = require('schema')
H.schema.install(H.root)
table.insert(runner.after_test, H.schema.after_test)

return H
