-- :Stepwise chat: the stepwise://chat buffer sends its prompt with :w, streams the reply in (text, tool calls,
-- the plan on top), steers during a run, shows approvals, and is restored from stepwise.conversation.
local H = require('helpers')
local api = vim.api

--- Record the chat's User events (StepwiseChat, StepwiseChatSent) from now on.
local function chat_events()
  local ev = { chat = {}, sent = {} }
  local group = api.nvim_create_augroup('stepwise-test-chat', { clear = true })
  api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'StepwiseChat', 'StepwiseChatSent' },
    callback = function(e)
      table.insert(e.match == 'StepwiseChat' and ev.chat or ev.sent, vim.deepcopy(e.data))
    end,
  })
  return ev
end

local function count(list, kind)
  return #vim.tbl_filter(function(e)
    return e.kind == kind
  end, list)
end

--- Type `text` as the prompt (below the last `## You`) and :w.
local function send(buf, text)
  api.nvim_set_current_buf(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  H.eq('## You', lines[#lines - 1], 'the prompt header is the line before last')
  api.nvim_buf_set_lines(buf, -2, -1, false, vim.split(text, '\n'))
  vim.cmd('write')
end

--- The index of the first line equal to `line` at or after `from`.
local function find_line(lines, line, from)
  for i = from or 1, #lines do
    if lines[i] == line then
      return i
    end
  end
end

--- Every text block the model was sent, per request.
local function request_texts(m)
  local out = {}
  for _, req in ipairs(H.recorded(m)) do
    local texts = {}
    for _, b in ipairs(H.find_all(req.body or req, function(t)
      return t.type == 'text' and type(t.text) == 'string'
    end)) do
      texts[#texts + 1] = b.text
    end
    out[#out + 1] = table.concat(texts, '\n')
  end
  return out
end

local function restart(m, state_dir)
  require('stepwise').stop(3000)
  H.setup(m, nil, state_dir)
end

return H.spec({
  {
    name = 'chat: :w sends the prompt; the plan, tool calls and the streamed reply appear in the buffer; reset empties it',
    timeout = 40000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      local m = H.mock({
        H.turn({
          text = 'Let me look.',
          calls = { H.todo({ { 'Read a.txt', 'in_progress' } }), { 'read_file', { path = 'a.txt' } } },
        }),
        H.turn({ calls = { H.todo({ { 'Read a.txt', 'completed' } }) } }),
        H.turn({ text = 'It says **alpha**, all in one line.', chunk_delay = 20 }),
      })
      H.setup(m)
      local cap = H.capture()
      local ev = chat_events()
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      H.eq('stepwise://chat', api.nvim_buf_get_name(buf), 'the chat buffer name')
      H.eq('markdown', vim.bo[buf].filetype, 'filetype')
      H.eq('acwrite', vim.bo[buf].buftype, 'buftype')
      H.wait(function()
        return count(ev.chat, 'restored') == 1
      end, 10000, 'the history to load (an empty conversation)')
      H.eq({ '# Plan', '', 'No todos.', '', '---', '', '## You', '' }, api.nvim_buf_get_lines(buf, 0, -1, false), 'a new chat')

      -- count the lines each change of the buffer touches while the reply streams
      local touched = {}
      api.nvim_buf_attach(buf, false, {
        on_lines = function(_, _, _, first, last_old, last_new)
          table.insert(touched, { first = first, old = last_old - first, new = last_new - first, total = api.nvim_buf_line_count(buf) })
        end,
      })
      send(buf, 'Read a.txt\nand tell me.')
      H.eq(false, vim.bo[buf].modified, 'sent: the buffer is not modified')
      local idle = H.wait_idle(cap, 20000)
      H.eq('end_turn', idle.reason, 'the run ends normally')
      H.wait(function()
        return H.buf_text(buf):find('all in one line.', 1, true)
      end, 5000, 'the whole reply', function()
        return H.buf_text(buf)
      end)

      local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
      H.eq({ '# Plan', '', '[x] #1: Read a.txt', '', '(1/1 completed)', '', '---' }, vim.list_slice(lines, 1, 7), 'the plan on top')
      local you = H.truthy(find_line(lines, '## You', 8), 'the sent prompt: ' .. vim.inspect(lines))
      H.eq({ '## You', '', 'Read a.txt', 'and tell me.' }, vim.list_slice(lines, you, you + 3), 'the prompt in the conversation')
      local agent = H.truthy(find_line(lines, '## stepwise', you), 'the agent header: ' .. vim.inspect(lines))
      local text = H.truthy(find_line(lines, 'Let me look.', agent), 'the first text: ' .. vim.inspect(lines))
      local tool = H.truthy(find_line(lines, '- ✓ `read_file` a.txt', text), 'the tool call line: ' .. vim.inspect(lines))
      H.truthy(find_line(lines, 'It says **alpha**, all in one line.', tool), 'the streamed reply joined on one line: ' .. vim.inspect(lines))
      H.eq({ '', '## You', '' }, vim.list_slice(lines, #lines - 2, #lines), 'a fresh prompt at the bottom')
      H.eq(1, #vim.tbl_filter(function(l)
        return l == '## stepwise'
      end, lines), 'one agent header for the whole run')

      -- u undoes typing, never the conversation
      local shown = H.buf_text(buf)
      api.nvim_buf_call(buf, function()
        vim.cmd('silent! undo')
      end)
      H.eq(shown, H.buf_text(buf), 'u leaves the conversation alone')

      -- the reply came in pieces, each change touching only the last lines, never the whole buffer
      H.truthy(count(ev.chat, 'text') >= 3, 'several text chunks: ' .. count(ev.chat, 'text'))
      for _, t in ipairs(touched) do
        H.truthy(t.old <= 7 and t.new <= 7, 'a small change: ' .. vim.inspect(t))
      end
      H.contains(request_texts(m)[1], 'Read a.txt\nand tell me.', 'the model got the prompt')
      H.eq({ { workspace = require('stepwise').current_folder().uri, session = 'main', kind = 'run', text = 'Read a.txt\nand tell me.' } }, ev.sent, 'sent as a run')

      -- a reset starts a new conversation: the chat shows it empty again
      vim.cmd('Stepwise reset')
      H.wait(function()
        return count(ev.chat, 'restored') == 2 and H.buf_text(buf):find('No todos.', 1, true)
      end, 10000, 'the chat reloaded after the reset', function()
        return H.buf_text(buf)
      end)
      H.eq({ '# Plan', '', 'No todos.', '', '---', '', '## You', '' }, api.nvim_buf_get_lines(buf, 0, -1, false), 'an empty chat after the reset')
    end,
  },
  {
    name = 'chat: :w during a run steers it; the approval shows in the buffer; <C-c> cancels',
    timeout = 45000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      local m = H.mock({
        H.turn({ text = 'Running it.', calls = { { 'bash', { command = 'echo hi' } } } }),
        H.turn({ text = 'Steered, as you say.', calls = { { 'read_file', { path = 'a.txt' } } } }),
        { type = 'hang' },
      })
      H.setup(m, { approval = 'ask' })
      local cap = H.capture()
      local ev = chat_events()
      local asked = {}
      H.stub_select(function(items, opts, on_choice)
        table.insert(asked, { items = items, opts = opts, on_choice = on_choice })
      end)
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      -- sent at once, before the (empty) history has loaded: shown after it
      H.eq(0, count(ev.chat, 'restored'), 'the history is not loaded yet')
      send(buf, 'Say hi')
      H.wait(function()
        return H.buf_text(buf):find('> ⚠ Run this command?', 1, true)
      end, 15000, 'the question in the chat', function()
        return { status = cap.status, text = H.buf_text(buf) }
      end)
      H.contains(H.buf_text(buf), '> ⚠ Run this command?\n> `echo hi`\n> :Stepwise allow', 'the question under the call')
      H.eq(0, #asked, 'no vim.ui.select while the chat shows')
      H.contains(H.buf_text(buf), '## You\n\nSay hi\n\n## stepwise\n\nRunning it.', 'the first prompt, then the reply')
      -- the run waits on the approval: the prompt now steers it
      send(buf, 'Only say hi once.')
      H.wait(function()
        return #ev.sent == 2
      end, 10000, 'the steer to be sent')
      H.eq('steer', ev.sent[2].kind, 'sent during a run: a steer')
      H.eq(nil, ev.sent[2].error, 'the steer was accepted')
      vim.cmd('Stepwise allow')
      H.wait(function()
        return #H.recorded(m) >= 3
      end, 20000, 'the third model request (hanging)', function()
        return H.buf_text(buf)
      end)
      -- the reply streams in as the next request goes out: wait for it
      H.wait(function()
        return H.buf_text(buf):find('Steered, as you say.', 1, true)
      end, 5000, 'the reply after the steer', function()
        return H.buf_text(buf)
      end)
      local texts = request_texts(m)
      H.contains(texts[2], 'Only say hi once.', 'the steer reached the model in its next request')
      H.truthy(not texts[1]:find('Only say hi once.', 1, true), 'not in the first request')
      local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
      local steer = H.truthy(find_line(lines, 'Only say hi once.'), 'the steer in the conversation: ' .. vim.inspect(lines))
      H.eq('## You', lines[steer - 2], 'the steer is a block of yours')
      H.truthy(find_line(lines, '> → Allow'), 'the answer to the approval: ' .. vim.inspect(lines))
      H.truthy(find_line(lines, '- ✓ `bash` echo hi'), 'the shell call: ' .. vim.inspect(lines))
      H.truthy(find_line(lines, 'Steered, as you say.', steer), 'the reply after the steer: ' .. vim.inspect(lines))

      -- <C-c> in the buffer cancels the hanging run
      local before = #cap.status
      api.nvim_feedkeys(api.nvim_replace_termcodes('<C-c>', true, false, true), 'x', false)
      local idle = H.wait_idle(cap, 10000, before)
      H.eq('cancelled', idle.reason, 'cancelled by <C-c>')
      H.wait(function()
        return H.buf_text(buf):find('> — run ended: cancelled', 1, true)
      end, 5000, 'the end of the run in the buffer', function()
        return H.buf_text(buf)
      end)
    end,
  },
  {
    name = 'chat: the conversation is restored from stepwise.conversation when the buffer opens after a restart',
    timeout = 60000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      local state_dir = H.tmpdir('state')
      local m = H.mock({
        H.turn({ text = 'Reading it.', calls = { { 'read_file', { path = 'a.txt' } } } }),
        H.turn({ text = 'The file holds alpha.' }),
      })
      H.setup(m, nil, state_dir)
      local cap = H.capture()
      local ev = chat_events()
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      H.wait(function()
        return count(ev.chat, 'restored') == 1
      end, 10000, 'the history to load')
      send(buf, 'What is in a.txt?')
      H.wait_idle(cap, 20000)
      H.wait(function()
        return H.buf_text(buf):find('The file holds alpha.', 1, true)
      end, 5000, 'the reply', function()
        return H.buf_text(buf)
      end)
      local live = api.nvim_buf_get_lines(buf, 0, -1, false)
      -- closing the window keeps the buffer: reopening shows it as it was
      vim.cmd('close')
      vim.cmd('Stepwise chat')
      H.eq(buf, api.nvim_get_current_buf(), 'the same buffer again')

      -- a restart: a new server, a new buffer; the history comes from the saved session
      vim.cmd('bwipeout! ' .. buf)
      restart(m, state_dir)
      cap = H.capture()
      vim.cmd('Stepwise chat')
      local buf2 = api.nvim_get_current_buf()
      H.wait(function()
        return count(ev.chat, 'restored') == 2
      end, 15000, 'the history to load again')
      local lines = api.nvim_buf_get_lines(buf2, 0, -1, false)
      local you = H.truthy(find_line(lines, '## You'), 'the prompt: ' .. vim.inspect(lines))
      H.eq('What is in a.txt?', lines[you + 2], 'the prompt restored')
      local agent = H.truthy(find_line(lines, '## stepwise', you), 'the agent: ' .. vim.inspect(lines))
      local t1 = H.truthy(find_line(lines, 'Reading it.', agent), 'the first text: ' .. vim.inspect(lines))
      local tool = H.truthy(find_line(lines, '- ✓ `read_file` a.txt', t1), 'the tool call: ' .. vim.inspect(lines))
      H.truthy(find_line(lines, 'The file holds alpha.', tool), 'the reply: ' .. vim.inspect(lines))
      H.eq({ '', '## You', '' }, vim.list_slice(lines, #lines - 2, #lines), 'the prompt at the bottom')
      -- what is shown live and restored is the same conversation
      H.eq(vim.list_slice(live, 8), vim.list_slice(lines, 8), 'restored as it was shown live')
    end,
  },
})
