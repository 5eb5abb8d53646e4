-- The server's typed questions (stepwise/ask) in the chat: a command the sandbox stopped asks under its call,
-- naming what it stopped; :Stepwise allow runs it outside the sandbox, :Stepwise deny refuses it. With no chat
-- in a window, vim.ui.select asks with the same three answers.
local H = require('helpers')
local api = vim.api

--- A workspace, a folder outside it (the sandbox stops writes there) and the command that writes there.
local function outside_write()
  H.workspace({ ['a.txt'] = 'a\n' })
  local outside = H.tmpdir('outside')
  local target = outside .. '/made.txt'
  return target, 'echo made > ' .. target .. ' && echo wrote it outside'
end

--- Opens the chat and sends `prompt`; returns its buffer.
local function chat_run(prompt)
  vim.cmd('Stepwise chat')
  local buf = api.nvim_get_current_buf()
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  api.nvim_buf_set_lines(buf, #lines - 1, #lines, false, { prompt })
  vim.cmd('write')
  return buf
end

local function wait_question(buf, cap)
  H.wait(function()
    return H.buf_text(buf):find('> ⚠ The sandbox stopped this command. Run it outside the sandbox?', 1, true)
  end, 20000, 'the question in the chat', function()
    return { status = cap.status, text = H.buf_text(buf) }
  end)
end

return H.spec({
  {
    name = 'ask: a command the sandbox stopped asks in the chat; :Stepwise allow runs it outside',
    timeout = 45000,
    fn = function()
      local target, command = outside_write()
      local m = H.mock({ H.turn({ calls = { { 'bash', { command = command } } } }), H.turn({ text = 'Done.' }) })
      H.setup(m, { approval = 'ask', sandbox = 'workspace-write' })
      local cap = H.capture()
      local selected = 0
      H.stub_select(function()
        selected = selected + 1
      end)
      local buf = chat_run('Write outside')
      wait_question(buf, cap)
      local text = H.buf_text(buf)
      H.contains(text, '> `' .. command .. '`', 'the command under the question')
      H.contains(text, '> the sandbox stopped: ', 'what the sandbox stopped')
      H.contains(text:match('> the sandbox stopped: ([^\n]*)') or '', target, 'it names the path')
      H.eq(nil, vim.uv.fs_stat(target), 'nothing ran outside before the answer')
      H.eq(0, selected, 'asked in the chat, not with vim.ui.select')
      vim.cmd('Stepwise allow')
      local idle = H.wait_idle(cap, 20000)
      H.eq('end_turn', idle.reason)
      H.eq({ 'made' }, vim.fn.readfile(target), 'it ran outside the sandbox')
      H.contains(H.buf_text(buf), '> → Allow', 'the answer in the chat')
      local results = H.tool_results(m)
      H.contains(H.result_text(results[1]), 'wrote it outside', 'the model read the run outside')
    end,
  },
  {
    name = 'ask: :Stepwise deny refuses it; with no chat in a window vim.ui.select asks',
    timeout = 45000,
    fn = function()
      local target, command = outside_write()
      local m = H.mock({
        H.turn({ calls = { { 'bash', { command = command } } } }),
        H.turn({ calls = { { 'bash', { command = command .. ' again' } } } }),
        H.turn({ text = 'Understood.' }),
      })
      H.setup(m, { approval = 'ask', sandbox = 'workspace-write' })
      local cap = H.capture()
      local asked = {}
      H.stub_select(function(items, opts, on_choice)
        asked[#asked + 1] = { prompt = opts.prompt, titles = vim.tbl_map(opts.format_item, items) }
        on_choice(items[3])
      end)
      local buf = chat_run('Write outside')
      wait_question(buf, cap)
      -- the chat leaves the window before the answer: the second question goes to vim.ui.select
      vim.cmd('enew')
      vim.cmd('Stepwise deny')
      H.wait(function()
        return H.buf_text(buf):find('> → Deny', 1, true)
      end, 10000, 'the refusal in the chat')
      local idle = H.wait_idle(cap, 20000)
      H.eq('end_turn', idle.reason)
      H.eq(1, #asked, 'the second question through vim.ui.select')
      H.eq({ 'Allow', 'Allow for this session', 'Deny' }, asked[1].titles)
      H.contains(asked[1].prompt, 'the sandbox stopped: ', 'the select says what the sandbox stopped')
      H.contains(asked[1].prompt, command .. ' again', 'and the command')
      H.eq(nil, vim.uv.fs_stat(target), 'refused twice: nothing ran outside')
      local results = H.tool_results(m)
      H.contains(H.result_text(results[1]), 'declined to run it outside the sandbox', 'the model read the refusal')
    end,
  },
})
