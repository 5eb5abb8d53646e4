-- Shell approvals through vim.ui.select, and saving documents before shell commands.
local H = require('helpers')
local api = vim.api

return H.spec({
  {
    name = 'a denied shell command reaches the model as an error tool_result',
    timeout = 40000,
    fn = function()
      local dir = H.workspace({ ['x.txt'] = 'x\n' })
      local m = H.mock({
        H.turn({ calls = { { 'bash', { command = 'echo hi > out.txt' } } } }),
        H.turn({ text = 'Understood, not running it.' }),
      })
      H.setup(m, { approval = 'ask' })
      local cap = H.capture()
      local asked = {}
      H.stub_select(function(items, opts, on_choice)
        local titles = {}
        local deny
        for _, it in ipairs(items) do
          local title = opts.format_item and opts.format_item(it) or it.title
          titles[#titles + 1] = title
          if title == 'Deny' then
            deny = it
          end
        end
        table.insert(asked, { prompt = opts.prompt, titles = titles })
        on_choice(deny)
      end)
      vim.cmd('Stepwise run Make a file')
      H.wait(function()
        return #asked > 0
      end, 15000, 'the approval prompt (vim.ui.select)', function()
        return { status = cap.status, notify = cap.notify }
      end)
      H.contains(asked[1].prompt, 'echo hi > out.txt', 'approval prompt')
      H.eq({ 'Allow', 'Allow for this session', 'Deny' }, asked[1].titles, 'approval choices')
      local idle = H.wait_idle(cap, 15000)
      H.eq('end_turn', idle.reason, 'the run ends normally')
      local states = vim.tbl_map(function(s)
        return s.state
      end, cap.status)
      H.truthy(vim.tbl_contains(states, 'waiting'), 'state waiting while asking: ' .. vim.inspect(states))
      H.eq(nil, vim.uv.fs_stat(dir .. '/out.txt'), 'the denied command did not run')
      local results = H.tool_results(m)
      H.truthy(#results > 0, 'the model was sent a tool_result: ' .. vim.inspect(H.recorded(m)))
      local denied = vim.tbl_filter(function(r)
        return r.is_error == true or H.result_text(r):lower():find('denied', 1, true) ~= nil
      end, results)
      H.truthy(#denied > 0, 'a tool_result with is_error / "denied": ' .. vim.inspect(results))
      H.contains(H.result_text(denied[1]):lower(), 'denied', 'the denied tool_result')
    end,
  },
  {
    name = 'stepwise/saveDocuments writes the edited buffer before a shell command',
    timeout = 40000,
    fn = function()
      local dir = H.workspace({ ['f.txt'] = 'alpha\n' })
      local m = H.mock({
        H.turn({ calls = { { 'edit_file', { path = 'f.txt', old_text = 'alpha', new_text = 'beta' } } } }),
        H.turn({ calls = { { 'bash', { command = 'cat f.txt' } } } }),
        H.turn({ text = 'Checked.' }),
      })
      H.setup(m, { approval = 'auto' })
      local cap = H.capture()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/f.txt'))
      local buf = api.nvim_get_current_buf()
      H.wait_attached(buf)
      vim.cmd('Stepwise run Change alpha')
      local idle = H.wait_idle(cap, 20000)
      H.eq('end_turn', idle.reason, 'the run ends normally')
      H.eq('beta', H.buf_text(buf), 'the buffer has the edit')
      H.eq(false, vim.bo[buf].modified, 'the buffer was written')
      H.eq('beta\n', H.read(dir .. '/f.txt'), 'the file on disk')
      local seen = vim.tbl_filter(function(r)
        return H.result_text(r):find('beta', 1, true) ~= nil
      end, H.tool_results(m))
      H.truthy(#seen > 0, 'the shell command saw the saved text: ' .. vim.inspect(H.tool_results(m)))
    end,
  },
  {
    name = 'buffers changed on disk by a shell command are reloaded',
    timeout = 30000,
    fn = function()
      local dir = H.workspace({ ['g.txt'] = 'before\n' })
      local m = H.mock({
        H.turn({ calls = { { 'bash', { command = 'echo after > g.txt' } } } }),
        H.turn({ text = 'Rewrote it.' }),
      })
      H.setup(m, { approval = 'auto' })
      local cap = H.capture()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/g.txt'))
      local buf = api.nvim_get_current_buf()
      H.wait_attached(buf)
      vim.cmd('Stepwise run Rewrite g')
      H.wait_idle(cap, 15000)
      H.wait(function()
        return H.buf_text(buf) == 'after'
      end, 3000, 'the buffer to be reloaded', function()
        return H.buf_text(buf)
      end)
    end,
  },
})
