-- :Stepwise cancel stops a long run; :Stepwise reset empties the plan.
local H = require('helpers')

return H.spec({
  {
    name = ':Stepwise cancel stops a hanging run (idle, reason cancelled)',
    timeout = 40000,
    fn = function()
      H.workspace({ ['a.txt'] = 'a\n' })
      local m = H.mock({
        H.turn({ calls = { H.todo({ { 'Long step', 'in_progress' } }) } }),
        { type = 'hang' },
      })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('Stepwise run Do something long')
      H.wait(function()
        local p = H.last_plan(cap)
        return p and #p.items == 1
      end, 15000, 'the plan of the long run', function()
        return { status = cap.status, notify = cap.notify }
      end)
      -- the model's second request hangs: the run is still going
      H.wait(function()
        return #H.recorded(m) >= 2
      end, 10000, 'the second model request', function()
        return H.recorded(m)
      end)
      H.sleep(300)
      for _, s in ipairs(cap.status) do
        H.truthy(s.state ~= 'idle', 'no idle before cancel: ' .. vim.inspect(cap.status))
      end
      local before = #cap.status
      vim.cmd('Stepwise cancel')
      local idle = H.wait_idle(cap, 10000, before)
      H.eq('cancelled', idle.reason, 'idle reason')
      local note = vim.tbl_filter(function(n)
        return n.msg:find('cancelled', 1, true)
      end, cap.notify)
      H.truthy(#note == 1 and note[1].level <= vim.log.levels.INFO, 'a quiet cancelled notification: ' .. vim.inspect(cap.notify))
      H.eq('idle', require('stepwise').current_folder().state, 'folder state')

      -- reset: a new conversation and an empty plan
      local plans = #cap.plan
      vim.cmd('Stepwise reset')
      H.wait(function()
        local p = #cap.plan > plans and H.last_plan(cap)
        return p and #p.items == 0
      end, 10000, 'an empty plan after reset', function()
        return cap.plan
      end)
      vim.cmd('Stepwise plan')
      H.eq({ 'No todos.' }, require('stepwise.plan').lines(), 'the plan window after reset')
    end,
  },
})
