-- The plan window's lines follow the plan.
local H = require('helpers')

return H.spec({
  {
    name = 'the floating plan window follows every plan change',
    timeout = 40000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local m = H.mock({
        H.turn({ calls = { H.todo({ { 'Read code', 'in_progress' }, { 'Write fix', 'pending' }, { 'Test', 'pending' } }) } }),
        H.turn({ delay = 800, calls = { H.todo({ { 'Read code', 'completed' }, { 'Write fix', 'in_progress' }, { 'Test', 'pending' } }) } }),
        H.turn({ delay = 800, calls = { H.todo({ { 'Read code', 'completed' }, { 'Write fix', 'completed' }, { 'Test', 'completed' } }) } }),
        H.turn({ text = 'Finished.' }),
      })
      H.setup(m)
      local cap = H.capture()
      local plan = require('stepwise.plan')

      vim.cmd('Stepwise plan')
      H.truthy(plan.is_open(), 'the plan window opens')
      H.wait(function()
        return vim.deep_equal(plan.lines(), { 'No todos.' })
      end, 10000, 'an empty plan', plan.lines)

      vim.cmd('Stepwise run Fix the bug')
      local stages = {
        { '[>] #1: Read code', '[ ] #2: Write fix', '[ ] #3: Test', '', '(0/3 completed)' },
        { '[x] #1: Read code', '[>] #2: Write fix', '[ ] #3: Test', '', '(1/3 completed)' },
        { '[x] #1: Read code', '[x] #2: Write fix', '[x] #3: Test', '', '(3/3 completed)' },
      }
      for i, want in ipairs(stages) do
        H.wait(function()
          return vim.deep_equal(plan.lines(), want)
        end, 10000, 'plan window stage ' .. i .. ': ' .. vim.inspect(want), plan.lines)
      end
      H.wait_idle(cap, 10000)
      vim.cmd('Stepwise plan')
      H.eq(false, plan.is_open(), 'the second :Stepwise plan closes the window')
      vim.cmd('Stepwise plan')
      H.eq(stages[3], plan.lines(), 'reopened with the last plan')
      local floats = vim.tbl_filter(function(w)
        return vim.api.nvim_win_get_config(w).relative ~= ''
      end, vim.api.nvim_list_wins())
      H.eq(1, #floats, 'one floating window')
      vim.cmd('Stepwise plan')
    end,
  },
})
