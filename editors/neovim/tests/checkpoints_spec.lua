-- Checkpoints and rewind: :Stepwise checkpoints (a picker, then a confirmation) puts an edited buffer back
-- through workspace/applyEdit, so `u` undoes the rewind; :Stepwise rewind {id} with an unknown id is refused.
local H = require('helpers')
local api = vim.api

return H.spec({
  {
    name = ':Stepwise checkpoints picks one, asks, and rewinds the buffer; u brings the edit back',
    timeout = 60000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      local m = H.mock({
        H.turn({ calls = { H.todo({ { 'Change a.txt', 'in_progress' } }) } }),
        H.turn({ calls = { { 'edit_file', { path = 'a.txt', old_text = 'alpha', new_text = 'beta' } } } }),
        H.turn({ text = 'Changed.' }),
      })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('edit a.txt')
      local buf = api.nvim_get_current_buf()
      H.wait_attached(buf)
      vim.cmd('Stepwise run Change a.txt')
      H.wait_idle(cap, 15000)
      H.eq('beta', H.buf_text(buf), 'the agent edited the buffer')
      local asked = {}
      H.stub_select(function(items, opts, on_choice)
        asked[#asked + 1] = { prompt = opts.prompt, items = vim.tbl_map(opts.format_item or tostring, items) }
        if #asked == 1 then
          for _, c in ipairs(items) do
            if vim.tbl_contains(c.files or {}, 'a.txt') then
              return on_choice(c)
            end
          end
          return on_choice(nil)
        end
        on_choice('Rewind')
      end)
      vim.cmd('Stepwise checkpoints')
      H.wait(function()
        return H.buf_text(buf) == 'alpha'
      end, 10000, 'the buffer back as before the edit', function()
        return { asked = asked, text = H.buf_text(buf), notify = cap.notify }
      end)
      H.truthy(#asked == 2, 'a picker, then a confirmation: ' .. vim.inspect(asked))
      H.contains(asked[2].prompt, 'a.txt', 'the confirmation names the file')
      -- The answer follows the edits that put the buffer back.
      H.wait(function()
        return vim.tbl_contains(require('stepwise.log').lines(), '⟲ rewound 1 file; the conversation and the plan are back as they were')
      end, 10000, 'the outcome in the transcript', function()
        return require('stepwise.log').lines()
      end)
      vim.cmd('normal! u')
      H.eq('beta', H.buf_text(buf), 'u undoes the rewind')
    end,
  },
  {
    name = ':Stepwise rewind with an unknown id is refused with the server message',
    timeout = 30000,
    fn = function()
      H.workspace({ ['a.txt'] = 'alpha\n' })
      H.setup(nil)
      local cap = H.capture()
      vim.cmd('edit a.txt')
      H.wait_attached(api.nvim_get_current_buf())
      vim.cmd('Stepwise rewind no-such-checkpoint')
      H.wait(function()
        for _, n in ipairs(cap.notify) do
          if n.msg:find('stepwise.rewind', 1, true) and n.level >= vim.log.levels.WARN then
            return true
          end
        end
      end, 10000, 'the refusal', function()
        return cap.notify
      end)
    end,
  },
})
