-- Drives Neovim for scripts/screenshot.sh (not a spec): a scripted run in the chat, then the review of its
-- change. At each view it writes `<dir>/<name>.ready` and waits for `<dir>/<name>.done` (the picture taken).
local H = require('helpers')
local api = vim.api
local dir = assert(vim.env.STEPWISE_SHOT_DIR, 'STEPWISE_SHOT_DIR')

local function shown(name)
  vim.cmd('redraw!')
  H.write(dir .. '/' .. name .. '.ready', '')
  vim.wait(60000, function()
    return vim.uv.fs_stat(dir .. '/' .. name .. '.done') ~= nil
  end, 50)
end

local function main()
  local ws = H.workspace({
    ['greet.py'] = 'def greet(name):\n    return "Hello " + name\n\n\nprint(greet("world"))\n',
    ['test_greet.py'] = 'from greet import greet\n\n\ndef test_greet():\n    assert greet("Ada") == "Hello, Ada!"\n',
  })
  local m = H.mock({
    H.turn({
      text = 'I will read the function and its test first.',
      calls = {
        H.todo({ { 'Read greet.py and its test', 'in_progress' }, { 'Fix the greeting', 'pending' }, { 'Run the tests', 'pending' } }),
        { 'read_file', { path = 'greet.py' } },
      },
    }),
    H.turn({
      text = 'The test expects a comma and an exclamation mark.',
      calls = {
        H.todo({ { 'Read greet.py and its test', 'completed' }, { 'Fix the greeting', 'in_progress' }, { 'Run the tests', 'pending' } }),
        { 'edit_file', { path = 'greet.py', old_text = 'return "Hello " + name', new_text = 'return f"Hello, {name}!"' } },
      },
    }),
    H.turn({
      calls = {
        H.todo({ { 'Read greet.py and its test', 'completed' }, { 'Fix the greeting', 'completed' }, { 'Run the tests', 'in_progress' } }),
        { 'bash', { command = 'python3 -c "from greet import greet; print(greet(\'Ada\'))"' } },
      },
    }),
    H.turn({
      calls = {
        H.todo({ { 'Read greet.py and its test', 'completed' }, { 'Fix the greeting', 'completed' }, { 'Run the tests', 'completed' } }),
      },
    }),
    H.turn({
      text = 'Done. `greet` now returns **`Hello, <name>!`**:\n\n```python\ndef greet(name):\n    return f"Hello, {name}!"\n```\n\nReview the change with `:Stepwise review`.',
      chunk_delay = 5,
    }),
  })
  H.setup(m, { approval = 'auto' })
  vim.cmd.edit(vim.fn.fnameescape(ws .. '/greet.py'))
  vim.cmd('Stepwise chat')
  local buf = api.nvim_get_current_buf()
  pcall(vim.treesitter.start, buf, 'markdown')
  local idle = false
  api.nvim_create_autocmd('User', {
    pattern = 'StepwiseStatus',
    callback = function(ev)
      idle = idle or ev.data.state == 'idle'
    end,
  })
  H.wait(function()
    return H.buf_text(buf):find('No todos.', 1, true)
  end, 10000, 'the chat')
  api.nvim_buf_set_lines(buf, -2, -1, false, { 'The greeting is wrong: make test_greet.py pass.' })
  vim.cmd('write')
  H.wait(function()
    return idle
  end, 30000, 'the run to end')
  api.nvim_buf_set_lines(buf, -2, -1, false, { 'Thanks! Now add a docstring.' })
  vim.bo[buf].modified = false
  vim.cmd('normal! G$')
  shown('chat')

  vim.cmd('tabonly')
  vim.cmd('only')
  local reviewed = false
  api.nvim_create_autocmd('User', {
    pattern = 'StepwiseReviewOpened',
    callback = function()
      reviewed = true
    end,
  })
  vim.cmd('Stepwise review')
  H.wait(function()
    return reviewed
  end, 10000, 'the review')
  shown('review')
end

local ok, err = pcall(main)
if not ok then
  H.write(dir .. '/error', type(err) == 'table' and tostring(err.message) or tostring(err))
end
H.stop_mocks()
vim.cmd('qall!')
