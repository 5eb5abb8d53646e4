-- Subagents (`task`) in the chat: each child's line (id, state, rounds, tokens) under the `task` call that made
-- it, updated live, its calls indented under it even while another child runs at the same time; `:Stepwise stop
-- sa-<n>` ends that child alone (completion offers the running ones); a child's question names the child; the
-- children are there again when the chat is loaded anew from stepwise.conversation. The mock model answers each
-- child from a script of its own (`--routes`: a child's first user message is its prompt).
local H = require('helpers')
local api = vim.api

local function chat_events()
  local ev = {}
  api.nvim_create_autocmd('User', {
    group = api.nvim_create_augroup('stepwise-test-subagents', { clear = true }),
    pattern = 'StepwiseChat',
    callback = function(e)
      ev[#ev + 1] = vim.deepcopy(e.data)
    end,
  })
  return ev
end

local function restored(ev, n)
  H.wait(function()
    return #vim.tbl_filter(function(e)
      return e.kind == 'restored'
    end, ev) >= n
  end, 15000, 'the chat\'s history to load')
end

local function send(buf, text)
  api.nvim_set_current_buf(buf)
  api.nvim_buf_set_lines(buf, -2, -1, false, { text })
  vim.cmd('write')
end

local function index_of(lines, line)
  for i, l in ipairs(lines) do
    if l == line then
      return i
    end
  end
end

--- The lines from the one equal to `first`, `n` of them (fails naming the buffer when there is none).
local function block_at(lines, first, n)
  local i = H.truthy(index_of(lines, first), 'no line ' .. vim.inspect(first) .. ' in ' .. vim.inspect(lines))
  return vim.list_slice(lines, i, i + n - 1)
end

local function ends_with(s, tail)
  return type(s) == 'string' and s:sub(-#tail) == tail
end

return H.spec({
  {
    name = 'subagents: two children at once, each under its task call; :Stepwise stop sa-1 ends it alone; shown again after a reload',
    timeout = 90000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      local m = H.mock({
        H.turn({
          calls = {
            { 'task', { prompt = 'CHILD-SLOW: wait for the build to finish', description = 'slow child' } },
            { 'task', { prompt = 'CHILD-QUICK: print one', description = 'quick child' } },
          },
        }),
        H.turn({ text = 'Both children reported.' }),
      }, {
        { key = 'CHILD-SLOW', steps = { H.turn({ calls = { { 'bash', { command = 'sleep 30' } } } }), H.turn({ text = 'I was stopped while the build slept.' }) } },
        { key = 'CHILD-QUICK', steps = { H.turn({ calls = { { 'bash', { command = 'echo one' } } } }), H.turn({ text = 'It printed one.' }) } },
      })
      H.setup(m)
      local cap = H.capture()
      local ev = chat_events()
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      restored(ev, 1)
      send(buf, 'Delegate the two jobs.')

      -- both children run: the slow one waits on its command, the quick one's call is under its own line
      H.wait(function()
        local text = H.buf_text(buf)
        return text:find('    - ⚙ `bash` sleep 30', 1, true) and text:find('    - ✓ `bash` echo one', 1, true)
          and text:find('\n  ↳ sa%-1 · running · [^\n]* · bash\n')
      end, 20000, 'both children\'s calls in the chat', function()
        return H.buf_text(buf)
      end)
      local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
      local slow = block_at(lines, '- ⚙ `task` general: slow child', 3)
      H.truthy(slow[2]:find('^  ↳ sa%-1 · running · %d+ rounds? · %d+ tokens · bash$'), 'the slow child\'s line, live: ' .. vim.inspect(lines))
      H.eq('    - ⚙ `bash` sleep 30', slow[3], 'its call under it')
      -- the quick child may have ended by now: its call's mark is ⚙ or ✓
      local qi = H.truthy(index_of(lines, '- ⚙ `task` general: quick child') or index_of(lines, '- ✓ `task` general: quick child'), 'the quick child\'s call: ' .. vim.inspect(lines))
      local quick = vim.list_slice(lines, qi, qi + 2)
      H.truthy(quick[2]:find('^  ↳ sa%-2 · '), 'the quick child\'s line: ' .. vim.inspect(lines))
      H.eq('    - ✓ `bash` echo one', quick[3], 'its call under its own line')
      H.eq(nil, index_of(lines, '- ✓ `bash` echo one'), 'a child\'s call is not the agent\'s')
      local folder = require('stepwise').current_folder()
      H.eq('sa-1', folder.subagents['sa-1'] and folder.subagents['sa-1'].id, 'the slow child is sa-1 (the first call)')
      local offered = require('stepwise').complete('', 'Stepwise stop ', 0)
      H.truthy(vim.tbl_contains(offered, 'sa-1'), ':Stepwise stop <Tab> offers the running child: ' .. vim.inspect(offered))

      vim.cmd('Stepwise stop sa-1')
      local idle = H.wait_idle(cap, 30000)
      H.eq('end_turn', idle.reason, 'the run went on without the stopped child')
      H.wait(function()
        return H.buf_text(buf):find('Both children reported.', 1, true)
      end, 5000, 'the agent\'s answer after its children', function()
        return H.buf_text(buf)
      end)
      lines = api.nvim_buf_get_lines(buf, 0, -1, false)
      slow = block_at(lines, '- ✓ `task` general: slow child', 3)
      H.truthy(slow[2]:find('^  ↳ sa%-1 · cancelled · %d+ rounds? · %d+ tokens$'), 'sa-1 says cancelled: ' .. vim.inspect(lines))
      H.truthy(ends_with(slow[3], '`bash` sleep 30') and slow[3]:sub(1, 6) == '    - ', 'its call still under it: ' .. vim.inspect(lines))
      quick = block_at(lines, '- ✓ `task` general: quick child', 3)
      H.truthy(quick[2]:find('^  ↳ sa%-2 · done · 2 rounds · %d+ tokens$'), 'sa-2 says done: ' .. vim.inspect(lines))
      H.eq('    - ✓ `bash` echo one', quick[3], 'its call')
      H.eq({}, require('stepwise.subagents').running_ids(folder), 'no child runs any more')
      local transcript = H.buf_text(require('stepwise.log').bufnr())
      H.contains(transcript, '  sa-1 → bash: sleep 30', 'the transcript names the child of a call')
      H.contains(transcript, '↳ sa-1 (general) slow child: cancelled · ', 'and says how it ended')
      H.contains(transcript, '■ you stopped sa-1', 'and that you stopped it')
      -- what the agent read: the stopped child's summary and line, the other's text
      local results = vim.tbl_map(H.result_text, H.tool_results(m))
      local function result(pat)
        return vim.iter(results):find(function(r)
          return r:find(pat) ~= nil
        end)
      end
      H.truthy(result('^I was stopped while the build slept%..*%(subagent sa%-1: .*it was cancelled'), 'sa-1\'s result: ' .. vim.inspect(results))
      H.truthy(result('^It printed one%..*%(subagent sa%-2: 2 rounds, %d+ tokens, done%)$'), 'sa-2\'s result: ' .. vim.inspect(results))

      -- the chat made anew: the conversation, children included, from stepwise.conversation
      local live = lines
      vim.cmd('bwipeout! ' .. buf)
      vim.cmd('Stepwise chat')
      local buf2 = api.nvim_get_current_buf()
      H.truthy(buf2 ~= buf, 'a new chat buffer')
      restored(ev, 2)
      local again = api.nvim_buf_get_lines(buf2, 0, -1, false)
      H.eq(live, again, 'the children shown again as they were live')
    end,
  },
  {
    name = 'subagents: children at once stay under their own calls; a child\'s question names it and its line says it asks',
    timeout = 30000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      H.setup(nil)
      local ev = chat_events()
      local handlers = require('stepwise.handlers').handlers()
      local ask = require('stepwise.ask')
      local folder = require('stepwise').current_folder()
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      restored(ev, 1)
      local at = { workspace = folder.uri, session = 'main', runId = 'r1' }
      local function call(id, name, phase, summary, extra)
        handlers['stepwise/toolCall'](nil, vim.tbl_extend('force', at, { id = id, name = name, phase = phase, summary = summary, step = vim.NIL }, extra or {}))
      end
      local function child(id, task, state, rounds, last)
        handlers['stepwise/subagent'](nil, vim.tbl_extend('force', at, {
          toolCallId = task, id = id, description = 'child ' .. id, agent = 'general', state = state, rounds = rounds, tokens = 100 * rounds, lastTool = last,
        }))
      end
      call('t1', 'task', 'started', 'first')
      call('t2', 'task', 'started', 'second')
      child('sa-1', 't1', 'running', 0)
      child('sa-2', 't2', 'running', 0)
      call('c2', 'read_file', 'started', 'a.txt', { subagent = 'sa-2' })
      child('sa-2', 't2', 'running', 1, 'read_file')
      call('c1', 'bash', 'started', 'make', { subagent = 'sa-1' })
      child('sa-1', 't1', 'running', 1, 'bash')
      call('c2', 'read_file', 'finished', 'a.txt', { subagent = 'sa-2', isError = true, output = 'no such file' })
      call('c3', 'bash', 'started', 'ls', { subagent = 'sa-2' })
      H.eq(
        {
          '- ⚙ `task` first',
          '  ↳ sa-1 · running · 1 round · 100 tokens · bash',
          '    - ⚙ `bash` make',
          '- ⚙ `task` second',
          '  ↳ sa-2 · running · 1 round · 100 tokens · read_file',
          '    - ✗ `read_file` a.txt',
          '          no such file',
          '    - ⚙ `bash` ls',
          '',
          '## You',
        },
        block_at(api.nvim_buf_get_lines(buf, 0, -1, false), '- ⚙ `task` first', 10),
        'each child\'s calls under its own call'
      )
      H.eq({ 'sa-1', 'sa-2' }, require('stepwise').complete('sa', 'Stepwise stop sa', 0), 'completion offers the running children')

      -- sa-1 asks: the question names it, its line says it waits for you; answered, it goes on
      local answers = {}
      coroutine.wrap(function()
        answers[#answers + 1] = ask.on_ask(nil, vim.tbl_extend('force', at, {
          callId = 'c1', kind = 'command', command = 'make', subagent = 'sa-1',
          message = '[subagent sa-1: child sa-1] Run this command? make',
        }))
      end)()
      H.wait(function()
        return H.buf_text(buf):find('> ⚠ [subagent sa-1: child sa-1] Run this command?\n> `make`', 1, true)
      end, 5000, 'the question naming the child', function()
        return H.buf_text(buf)
      end)
      H.truthy(index_of(api.nvim_buf_get_lines(buf, 0, -1, false), '  ↳ sa-1 · running · 1 round · 100 tokens · asks you'), 'the child\'s line says it asks: ' .. H.buf_text(buf))
      vim.cmd('Stepwise allow')
      H.wait(function()
        return #answers == 1
      end, 5000, 'the answer')
      H.eq({ answer = 'allow' }, answers[1], 'answered')
      H.truthy(index_of(api.nvim_buf_get_lines(buf, 0, -1, false), '  ↳ sa-1 · running · 1 round · 100 tokens · bash'), 'no longer asking: ' .. H.buf_text(buf))
      H.eq({ '[subagent sa-2] Run this command?', '`x`' }, ask.lines({ kind = 'command', command = 'x', subagent = 'sa-2' }), 'a question of a child the message does not name')

      -- sa-1 ends: no longer offered; :Stepwise stop without an id says how
      child('sa-1', 't1', 'done', 2)
      H.truthy(index_of(api.nvim_buf_get_lines(buf, 0, -1, false), '  ↳ sa-1 · done · 2 rounds · 200 tokens'), 'its line when done: ' .. H.buf_text(buf))
      H.eq({ 'sa-2' }, require('stepwise.subagents').running_ids(folder), 'only the one running')
      local cap = H.capture()
      vim.cmd('Stepwise stop')
      H.contains(cap.notify[#cap.notify].msg, 'usage: :Stepwise stop sa-<n> (a child agent; running: sa-2)', 'the usage')
    end,
  },
})
