-- A run edits an open buffer: text, one undo per agent edit, the step's virtual text,
-- code lenses, progress and the transcript.
local H = require('helpers')
local api = vim.api

return H.spec({
  {
    name = 'a run edits the open buffer; u reverts one agent edit at a time',
    timeout = 45000,
    fn = function()
      local original = 'hello world\nsecond line\nthird line\n'
      local dir = H.workspace({ ['greet.txt'] = original })
      local m = H.mock({
        H.turn({
          text = 'I will update the greeting.',
          calls = {
            H.todo({ { 'Edit greeting', 'in_progress' }, { 'Review', 'pending' } }),
            { 'edit_file', { path = 'greet.txt', old_text = 'hello world', new_text = 'hello stepwise' } },
            { 'edit_file', { path = 'greet.txt', old_text = 'second line', new_text = 'second edit' } },
          },
        }),
        H.turn({ delay = 1500, calls = { H.todo({ { 'Edit greeting', 'completed' }, { 'Review', 'in_progress' } }) } }),
        H.turn({ delay = 1500, calls = { H.todo({ { 'Edit greeting', 'completed' }, { 'Review', 'completed' } }) } }),
        H.turn({ text = 'All done.' }),
      })
      H.setup(m)
      local cap = H.capture()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/greet.txt'))
      local buf = api.nvim_get_current_buf()
      local client = H.wait_attached(buf)

      -- one client, its settings went as init_options and as settings.stepwise
      H.eq('mock-model', client.config.init_options.model, 'init_options.model')
      H.eq(m.url, client.config.init_options.baseUrl, 'init_options.baseUrl')
      H.eq(m.url, client.settings.stepwise.baseUrl, 'settings.stepwise.baseUrl')
      H.eq(true, client.config.capabilities.experimental.stepwise.saveDocuments, 'saveDocuments capability')

      vim.cmd('Stepwise run Change the greeting')

      -- both edits land in the buffer
      H.wait(function()
        return H.buf_text(buf) == 'hello stepwise\nsecond edit\nthird line'
      end, 15000, 'the agent edits in the buffer', function()
        return { text = H.buf_text(buf), status = cap.status, notify = cap.notify }
      end)

      -- virtual text at the edited line names the in-progress step
      local mark = H.wait(function()
        local mk = require('stepwise.marks').get(buf)
        return mk and mk.text:find('Edit greeting', 1, true) and mk
      end, 3000, 'the step virtual text', function()
        return H.virt_texts(buf, 1)
      end)
      H.eq(1, mark.line, 'the virtual text is on the line of the last edit')

      -- code lens: 0/2 with the in-progress item, then 1/2 · Review, then 2/2 · done
      H.wait(function()
        local t = H.lens_text(buf, 0)
        return t:find('0/2', 1, true) and t:find('Edit greeting', 1, true)
      end, 5000, 'code lens 0/2 · Edit greeting', function()
        return H.virt_texts(buf, 0)
      end)
      H.wait(function()
        local t = H.lens_text(buf, 0)
        return t:find('1/2', 1, true) and t:find('Review', 1, true)
      end, 8000, 'code lens 1/2 · Review', function()
        return H.virt_texts(buf, 0)
      end)
      -- the virtual text follows the plan's in-progress step
      H.wait(function()
        local mk = require('stepwise.marks').get(buf)
        return mk and mk.text:find('Review', 1, true)
      end, 3000, 'the virtual text to name the new in-progress step', function()
        return require('stepwise.marks').get(buf)
      end)

      local idle = H.wait_idle(cap, 15000)
      H.eq('end_turn', idle.reason, 'the run ends with end_turn')
      H.wait(function()
        local t = H.lens_text(buf, 0)
        return t:find('2/2', 1, true)
      end, 5000, 'code lens 2/2', function()
        return H.virt_texts(buf, 0)
      end)
      H.eq(nil, require('stepwise.marks').get(buf), 'the step virtual text is cleared when the run ends')

      -- run ending notified at a quiet level
      local ended = vim.tbl_filter(function(n)
        return n.msg:find('run finished', 1, true)
      end, cap.notify)
      H.truthy(#ended == 1, 'one run-finished notification: ' .. vim.inspect(cap.notify))
      H.truthy(ended[1].level <= vim.log.levels.INFO, 'run-finished at INFO or below')

      -- work-done progress went through the built-in handler (LspProgress)
      local kinds = {}
      for _, p in ipairs(cap.progress) do
        local token = p.params and p.params.token
        if type(token) == 'string' and token:find('^stepwise/') then
          kinds[#kinds + 1] = p.params.value.kind
        end
      end
      H.eq('begin', kinds[1], 'first progress kind')
      H.eq('end', kinds[#kinds], 'last progress kind')
      H.truthy(vim.tbl_contains(kinds, 'report'), 'a progress report: ' .. vim.inspect(kinds))

      -- the transcript has the assistant text and the tool calls
      local log = table.concat(require('stepwise.log').lines(), '\n')
      H.contains(log, 'I will update the greeting.', 'transcript')
      H.contains(log, 'edit_file', 'transcript')
      H.contains(log, 'All done.', 'transcript')
      H.contains(log, 'run ended: end_turn', 'transcript')
      vim.cmd('Stepwise log')
      H.eq('stepwise://log', api.nvim_buf_get_name(0), 'the log window shows the transcript')
      vim.cmd('close')

      -- undo: one `u` per agent edit
      H.eq(buf, api.nvim_get_current_buf(), 'back in the edited buffer')
      vim.cmd('silent normal! u')
      H.eq('hello stepwise\nsecond line\nthird line', H.buf_text(buf), 'after one u (the second edit reverted)')
      vim.cmd('silent normal! u')
      H.eq('hello world\nsecond line\nthird line', H.buf_text(buf), 'after two u (both reverted)')
    end,
  },
  {
    name = 'edits to files that are not open are written to disk (a second edit of the same file too)',
    timeout = 30000,
    fn = function()
      local dir = H.workspace({ ['old.txt'] = 'one\ntwo\n' })
      local m = H.mock({
        H.turn({
          calls = {
            { 'write_file', { path = 'sub/new.txt', content = 'fresh file\n' } },
            { 'edit_file', { path = 'old.txt', old_text = 'two', new_text = 'deux' } },
          },
        }),
        -- the first edit loaded the buffer: it is still the agent's, so the second is written too
        H.turn({ calls = { { 'edit_file', { path = 'old.txt', old_text = 'one', new_text = 'un' } } } }),
        H.turn({ text = 'Wrote them.' }),
      })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('Stepwise run Write files')
      local idle = H.wait_idle(cap, 15000)
      H.eq('end_turn', idle.reason, 'the run ends normally')
      H.eq('fresh file\n', H.read(dir .. '/sub/new.txt'), 'the new file on disk')
      H.eq('un\ndeux\n', H.read(dir .. '/old.txt'), 'the edited file on disk, both edits')
      for _, name in ipairs({ 'sub/new.txt', 'old.txt' }) do
        local b = vim.fn.bufnr(dir .. '/' .. name)
        if b ~= -1 and api.nvim_buf_is_loaded(b) then
          H.eq(false, vim.bo[b].modified, name .. ' buffer is not left modified')
        end
      end
      local results = vim.tbl_map(H.result_text, H.tool_results(m))
      H.truthy(vim.tbl_contains(results, 'Edited old.txt'), 'edit_file result: ' .. vim.inspect(results))
    end,
  },
})
